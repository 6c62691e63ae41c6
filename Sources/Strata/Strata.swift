// The umbrella module: `import Strata` gives the backend-neutral core (manifest, runner, seeds, mapper) and every
// backend (SQLite, PostgreSQL), so a program names one module whatever it uses.
@_exported import StrataCore
@_exported import StrataPostgres
@_exported import StrataSQLite
