// swift-tools-version:6.0
import PackageDescription

// The benchmarks, the fault suite and what they share, apart from the product: Liveline's own
// package builds none of this. The scripts build it in Liveline's build folder
// (`--scratch-path ../.build`, scripts/build-workers), where every Liveline module it uses is
// already built, so only these targets compile.

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]
let package = Package(
    name: "LivelineBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveline-bench", targets: ["liveline-bench"]),
        .executable(name: "apns-bench", targets: ["apns-bench"]),
        .executable(name: "store-bench", targets: ["store-bench"]),
        .executable(name: "translator-bench", targets: ["translator-bench"]),
        .executable(name: "sender-bench", targets: ["sender-bench"]),
        .executable(name: "dlq-bench", targets: ["dlq-bench"]),
    ],
    dependencies: [
        .package(name: "Liveline", path: ".."),
        // The versions Liveline resolves, so the modules both use are built once.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // What every benchmark prints about its own process (peak RSS, CPU time), the events
        // they send, and the loss ledger that accounts for each of them.
        .target(
            name: "LivelineBenchSupport",
            dependencies: [
                .product(name: "LivelineCore", package: "Liveline"),
                .product(name: "LivelineProducer", package: "Liveline"),
                .product(name: "LivelineModels", package: "Liveline"),
            ]
        ),
        // The benchmarks of the shipped processes, the fault suite and the scale demo: each
        // drives real `liveline` workers as child processes.
        .executableTarget(
            name: "liveline-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineChildProcess", package: "Liveline"),
                .product(name: "LivelineAMQP", package: "Liveline"),
                .product(name: "LivelineAPI", package: "Liveline"),
                .product(name: "LivelineCodecs", package: "Liveline"),
                .product(name: "LivelineCore", package: "Liveline"),
                .product(name: "LivelineServices", package: "Liveline"),
                .product(name: "LivelineMessaging", package: "Liveline"),
                .product(name: "LivelineModels", package: "Liveline"),
                .product(name: "LivelineProducer", package: "Liveline"),
                .product(name: "LivelineRuntime", package: "Liveline"),
                .product(name: "LivelineStore", package: "Liveline"),
                .product(name: "APNsSimulator", package: "Liveline"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The parts in the benchmark's own process.
        .executableTarget(
            name: "apns-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineAPNs", package: "Liveline"),
                .product(name: "APNsSimulator", package: "Liveline"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "store-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineStore", package: "Liveline"),
                .product(name: "LivelineAPI", package: "Liveline"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "translator-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineServices", package: "Liveline"),
                .product(name: "LivelineProducer", package: "Liveline"),
                .product(name: "LivelineCore", package: "Liveline"),
                .product(name: "LivelineAMQP", package: "Liveline"),
                .product(name: "LivelineMessaging", package: "Liveline"),
                .product(name: "LivelineStore", package: "Liveline"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "sender-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineServices", package: "Liveline"),
                .product(name: "LivelineCore", package: "Liveline"),
                .product(name: "LivelineAMQP", package: "Liveline"),
                .product(name: "LivelineMessaging", package: "Liveline"),
                .product(name: "LivelineAPNs", package: "Liveline"),
                .product(name: "APNsSimulator", package: "Liveline"),
                .product(name: "LivelineStore", package: "Liveline"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "dlq-bench",
            dependencies: [
                "LivelineBenchSupport",
                .product(name: "LivelineServices", package: "Liveline"),
                .product(name: "LivelineCore", package: "Liveline"),
                .product(name: "LivelineAMQP", package: "Liveline"),
                .product(name: "LivelineMessaging", package: "Liveline"),
                .product(name: "LivelineStore", package: "Liveline"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(name: "LivelineBenchSupportTests", dependencies: ["LivelineBenchSupport"]),
    ]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}
