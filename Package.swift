// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way: models ← core ← (amqp, apns, store) ← services ← executables.
let package = Package(
    name: "Liveline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveline", targets: ["liveline"]),
        .executable(name: "liveline-bench", targets: ["liveline-bench"]),
        .library(name: "LivelineAMQP", targets: ["LivelineAMQP"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        .target(
            name: "LivelineAMQP",
            dependencies: [
                "CRabbitMQ",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LivelineMessaging",
            dependencies: ["LivelineAMQP"]
        ),
        .executableTarget(
            name: "liveline",
            dependencies: [
                "LivelineAMQP",
                "LivelineMessaging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "liveline-bench",
            dependencies: [
                "LivelineAMQP",
                "LivelineMessaging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LivelineAMQPTests",
            dependencies: ["LivelineAMQP", "LivelineMessaging"]
        ),
    ]
)
