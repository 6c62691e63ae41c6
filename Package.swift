// swift-tools-version:6.0
import PackageDescription

/// The commit `strata --version` names. `.ci/package` sets STRATA_BUILD_COMMIT (`git rev-parse HEAD`, with `-dirty`
/// when tracked files have changes); a plain `swift build` leaves it unset and the command says the commit is
/// unknown. Only letters, digits, `.` and `-` are taken, so the value is a C string literal as it stands.
let buildCommit = Context.environment["STRATA_BUILD_COMMIT"].flatMap { value -> String? in
    let plain = !value.isEmpty && value.count <= 64
        && value.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "." || $0 == "-") }
    return plain ? value : nil
}

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
        // What the build was told about itself (the commit), for `strata --version`.
        .target(
            name: "CStrataBuild",
            cSettings: buildCommit.map { [.define("STRATA_BUILD_COMMIT", to: "\"\($0)\"")] } ?? []
        ),
        .executableTarget(
            name: "strata",
            dependencies: ["Strata", "CStrataBuild"]
        ),
        .executableTarget(
            name: "strata-bench",
            dependencies: ["Strata", "CSQLite", "CLibPQ"]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataCore", "StrataSQLite", "StrataPostgres", "CSQLite", "CLibPQ"]
        ),
        // An app's view of the library: its manifest, SQL and CSV files are resources of this target, read through
        // `Bundle.module`, as a program that migrates its database at launch ships them.
        .testTarget(
            name: "StrataLaunchTests",
            dependencies: ["Strata"],
            resources: [.copy("Resources/manifests"), .copy("Resources/sql"), .copy("Resources/csv")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
