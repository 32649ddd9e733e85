// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way: models ← core ← (amqp, apns, store) ← services ← executables.
let package = Package(
    name: "Liveline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveline", targets: ["liveline"]),
        .executable(name: "liveline-bench", targets: ["liveline-bench"]),
        .library(name: "LivelineModels", targets: ["LivelineModels"]),
        .library(name: "LivelineCore", targets: ["LivelineCore"]),
        .library(name: "LivelineAMQP", targets: ["LivelineAMQP"]),
        .library(name: "LivelineMessaging", targets: ["LivelineMessaging"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // No dependencies at all: an iOS app imports this module to share the exact
        // ActivityKit Codable shapes with the server.
        .target(name: "LivelineModels"),
        // Pure translation logic: Foundation only, no I/O.
        .target(name: "LivelineCore", dependencies: ["LivelineModels"]),
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
        .testTarget(name: "LivelineModelsTests", dependencies: ["LivelineModels"]),
        .testTarget(
            name: "LivelineCoreTests",
            dependencies: ["LivelineCore", "LivelineModels"],
            resources: [.copy("Golden")]
        ),
        .testTarget(
            name: "LivelineAMQPTests",
            dependencies: ["LivelineAMQP", "LivelineMessaging"]
        ),
    ]
)
