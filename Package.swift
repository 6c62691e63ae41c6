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
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "Strata",
            dependencies: ["CSQLite", "CLibXML2", "CCrypto"]
        ),
        .executableTarget(
            name: "strata",
            dependencies: ["Strata"]
        ),
        .executableTarget(
            name: "strata-bench",
            dependencies: ["Strata", "CSQLite"]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "CSQLite"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
