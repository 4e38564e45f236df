// swift-tools-version: 6.1
import PackageDescription

// Yedi backend: four services speaking protobuf-c messages over TLS (OpenSSL) through RPCCore.
// Swift packages come from the offline mirror; name them by URL and a listed version only.

let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")

let package = Package(
    name: "Yedi",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tls-soak", targets: ["TLSSoak"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // MARK: C at the edge: one thin target per C library.

        /// The system OpenSSL (libssl + libcrypto, pkg-config `openssl`) and a header of macro shims.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // MARK: The RPC core shared by every service.

        .target(
            name: "RPCCore",
            dependencies: ["COpenSSL", nioCore, nioPosix, logging]
        ),

        // MARK: Tools

        /// Leak soak: thousands of TLS connect-handshake-close cycles against an in-process server.
        .executableTarget(
            name: "TLSSoak",
            dependencies: [
                "RPCCore", nioCore, nioPosix, .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: Tests

        .testTarget(
            name: "RPCCoreTests",
            dependencies: ["RPCCore", nioCore, nioPosix, .product(name: "NIOEmbedded", package: "swift-nio")]
        ),
    ]
)
