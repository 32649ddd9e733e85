// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way: (models, codecs) ← core ← (amqp, apns, store) ← services ← runtime ← executables.

/// The compiler's stricter rules, for every Swift target (applied at the end of this file):
/// `any` spelled out for existentials, so protocol-typed values are visible at a glance.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]
/// How the `liveline` binary is linked on Linux, for the resident memory of every worker
/// (docs/PERFORMANCE.md):
/// - The image builds it with `--static-swift-stdlib` (deploy/Dockerfile), which exports the
///   binary's 55,000 symbols and leaves 3.4 MiB of relocations that the loader reads at
///   start-up and that then stay resident. lld (shipped with the toolchain) packs the relative
///   relocations (DT_RELR, glibc 2.36, Debian 12) and the binary exports only what the C
///   libraries need.
/// - The functions the workers run (scripts/order-file) go first and together: scattered over
///   the 33 MiB of code, they kept 22 MiB of it resident in each worker.
let shippedLinkFlags = [
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--no-export-dynamic",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/liveline/liveline.order",
    // Functions renamed since the list was made are only left where they would be.
    "-Xlinker", "--no-warn-symbol-ordering",
]
let package = Package(
    name: "Liveline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveline", targets: ["liveline"]),
        .library(name: "LivelineModels", targets: ["LivelineModels"]),
        .library(name: "LivelineCodecs", targets: ["LivelineCodecs"]),
        .library(name: "LivelineCore", targets: ["LivelineCore"]),
        .library(name: "LivelineAMQP", targets: ["LivelineAMQP"]),
        .library(name: "LivelineMessaging", targets: ["LivelineMessaging"]),
        .library(name: "LivelineAPNs", targets: ["LivelineAPNs"]),
        .library(name: "APNsSimulator", targets: ["APNsSimulator"]),
        .library(name: "LivelineStore", targets: ["LivelineStore"]),
        .library(name: "LivelineAPI", targets: ["LivelineAPI"]),
        .library(name: "LivelineProducer", targets: ["LivelineProducer"]),
        .library(name: "LivelineServices", targets: ["LivelineServices"]),
        .library(name: "LivelineRuntime", targets: ["LivelineRuntime"]),
        // For the Benchmarks package, which drives the workers as child processes, as the tests do.
        .library(name: "LivelineChildProcess", targets: ["LivelineChildProcess"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // jwt-kit 5.8 needs swift-crypto 4; the APNs code builds with either major version.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // No dependencies at all: an iOS app imports this module to share the exact
        // ActivityKit Codable shapes with the server.
        .target(name: "LivelineModels"),
        // The protocol every module's typed log metadata keys conform to.
        .target(name: "LivelineLogging", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The wire forms Liveline reads and writes byte by byte: JSON (value, parser, writer,
        // Codable encoder and decoder), hex and UUID text, base64url, millisecond dates.
        // Foundation only, so every module can share one of each.
        .target(name: "LivelineCodecs"),
        // Pure translation logic, no I/O. swift-crypto only for the SHA-1 of job ids.
        .target(
            name: "LivelineCore",
            dependencies: ["LivelineModels", "LivelineCodecs", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        .target(
            name: "LivelineAMQP",
            dependencies: [
                "LivelineLogging",
                "CRabbitMQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "LivelineMessaging",
            dependencies: ["LivelineAMQP"]
        ),
        .target(
            name: "LivelineHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .target(
            name: "LivelineAPNs",
            dependencies: [
                "LivelineLogging",
                "LivelineCodecs",
                "LivelineHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "APNsSimulator",
            dependencies: [
                "LivelineCodecs",
                "LivelineHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "LivelineStore",
            dependencies: [
                "LivelineLogging",
                "LivelineCodecs",
                "LivelineCore",
                "LivelineModels",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LivelineAPI",
            dependencies: [
                "LivelineCodecs",
                "LivelineCore",
                "LivelineLogging",
                "LivelineModels",
                "LivelineStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Typed CloudEvents for Swift domain services; no store, no service lifecycle.
        .target(
            name: "LivelineProducer",
            dependencies: ["LivelineCodecs", "LivelineModels", "LivelineCore", "LivelineAMQP", "LivelineMessaging"]
        ),
        // The long-running workers: translator and sender.
        .target(
            name: "LivelineServices",
            dependencies: [
                "LivelineCodecs",
                "LivelineLogging",
                "LivelineCore", "LivelineModels", "LivelineAMQP", "LivelineMessaging", "LivelineStore", "LivelineAPNs",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The composition root: settings and the wiring of every service. Executables stay thin.
        .target(
            name: "LivelineRuntime",
            dependencies: [
                "LivelineCodecs",
                "LivelineLogging",
                "LivelineModels",
                "LivelineCore",
                "LivelineAMQP",
                "LivelineMessaging",
                "LivelineStore",
                "LivelineAPI",
                "LivelineAPNs",
                "APNsSimulator",
                "LivelineProducer",
                "LivelineServices",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "liveline",
            dependencies: [
                "LivelineCodecs", "LivelineStore",
                "LivelineRuntime",
                "LivelineCore",
                "LivelineAMQP",
                "LivelineMessaging",
                "LivelineAPI",
                "LivelineAPNs",
                "LivelineServices",
                "APNsSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["liveline.order"],
            linkerSettings: [.unsafeFlags(shippedLinkFlags, .when(platforms: [.linux]))]
        ),
        // A child process whose end is always seen: the tests and the Benchmarks package start
        // `liveline`, scripts and servers with it.
        .target(name: "LivelineChildProcess", path: "Tests/LivelineChildProcess"),
        // Helpers for tests that use the real RabbitMQ scripts/test starts.
        .target(
            name: "LivelineTestSupport",
            dependencies: ["LivelineAMQP", "LivelineChildProcess", .product(name: "Logging", package: "swift-log")],
            path: "Tests/LivelineTestSupport"
        ),
        // A fresh SQLite file or PostgreSQL schema per test, for every target that needs a store.
        .target(
            name: "LivelineStoreTestSupport",
            dependencies: [
                "LivelineStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LivelineStoreTestSupport"
        ),
        .testTarget(name: "LivelineModelsTests", dependencies: ["LivelineModels"]),
        .testTarget(name: "LivelineCodecsTests", dependencies: ["LivelineCodecs", "LivelineModels"]),
        .testTarget(name: "LivelineChildProcessTests", dependencies: ["LivelineChildProcess"]),
        .testTarget(
            name: "LivelineCoreTests",
            dependencies: ["LivelineCodecs", "LivelineCore", "LivelineModels"],
            resources: [.copy("Golden")]
        ),
        .testTarget(
            name: "LivelineAMQPTests",
            dependencies: ["LivelineAMQP", "LivelineMessaging", "LivelineTestSupport"]
        ),
        .testTarget(
            name: "LivelineAPNsTests",
            dependencies: [
                "LivelineChildProcess",
                "LivelineCodecs",
                "LivelineAPNs",
                "APNsSimulator",
                "LivelineHTTP2",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        // The HTTP/2 session byte by byte, with no sockets.
        .testTarget(
            name: "LivelineHTTP2Tests",
            dependencies: [
                "LivelineHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "LivelineProducerTests",
            dependencies: ["LivelineCodecs", "LivelineProducer", "LivelineCore", "LivelineModels"]
        ),
        .testTarget(
            name: "LivelineServicesTests",
            dependencies: [
                "LivelineCodecs",
                "LivelineServices", "LivelineProducer", "LivelineCore", "LivelineModels", "LivelineAMQP",
                "LivelineMessaging", "LivelineStore", "LivelineAPNs", "APNsSimulator", "LivelineTestSupport",
                "LivelineStoreTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "LivelineRuntimeTests",
            dependencies: [
                "LivelineRuntime", "LivelineAMQP", "LivelineServices", "LivelineStore", "LivelineStoreTestSupport", "LivelineTestSupport", "LivelineCore",
                "LivelineAPI", "LivelineLogging",
                "LivelineMessaging", "LivelineProducer", "LivelineModels", "LivelineAPNs", "APNsSimulator", "LivelineChildProcess",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "LivelineStoreTests",
            dependencies: [
                "LivelineCore",
                "LivelineStore", "LivelineStoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Stores the version before apps were kept apart filled, for the migration's test.
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "LivelineAPITests",
            dependencies: [
                "LivelineCore",
                "LivelineAPI",
                "LivelineStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}
