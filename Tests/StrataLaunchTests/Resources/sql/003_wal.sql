-- The app reads while it syncs: WAL lets readers go on while a write commits.
PRAGMA journal_mode = WAL;
