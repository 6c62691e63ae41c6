// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Strata",
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // Backend-neutral: manifest, plan, runner, history rules, CSV and value conversion, the mapper's coding,
        // and the protocols a database backend implements.
        .target(
            name: "StrataCore",
            dependencies: ["CLibXML2", "CCrypto"]
        ),
        // The SQLite backend: the only target that speaks SQLite's C API.
        .target(
            name: "StrataSQLite",
            dependencies: ["StrataCore", "CSQLite"]
        ),
        // The PostgreSQL backend: the only target that speaks libpq.
        .target(
            name: "StrataPostgres",
            dependencies: ["StrataCore", "CLibPQ"]
        ),
        // The umbrella: `import Strata` brings the core and every backend.
        .target(
            name: "Strata",
            dependencies: ["StrataCore", "StrataSQLite", "StrataPostgres"]
        ),
        .executableTarget(
            name: "strata",
            dependencies: ["Strata"]
        ),
        .executableTarget(
            name: "strata-bench",
            dependencies: ["Strata", "CSQLite", "CLibPQ"]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataCore", "StrataSQLite", "StrataPostgres", "CSQLite", "CLibPQ"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
