import Foundation
import LivelineAMQP
import LivelineMessaging
import LivelineProducer
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// `liveline demo`: the quickstart's ride, delivery and game, published to a system that
/// is already running (translators, senders and an APNs simulator), with the demo devices
/// registered in its store first, as the apps would through the api.
public struct Demo: Sendable {
    public var topology = LivelineTopology()

    public init() {}

    /// Registers the devices, publishes one run of the scenario with confirms, and returns
    /// what was published, for printing. `connection` is a publisher whose broker has the
    /// topology (``withPublisher(_:topology:as:logger:_:)``).
    public func publishOnce(connection: AMQPConnection, store: any ActivityStore) async throws -> [String] {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let scenario = DemoScenario(userSuffix: suffix)
        try await scenario.registerDevices(in: store)
        let publisher = EventPublisher(connection: connection, source: "//demo.liveline", topology: topology)
        try await scenario.publish(with: publisher, badEventTo: topology.eventsExchange, store: store)
        var lines = ["published demo run \(suffix) to \(topology.eventsExchange) (every publish confirmed):"]
        for device in scenario.devices {
            lines.append("  \(device.label), token \(device.token.prefix(8))…")
        }
        lines.append("  plus one malformed event, which must end in the dead-letter queue")
        lines.append("follow them with: liveline trace \(scenario.rideID) | liveline trace \(scenario.gameID) | liveline dlq list")
        return lines
    }
}
