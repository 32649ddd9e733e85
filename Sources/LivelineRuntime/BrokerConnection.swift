import LivelineAMQP
import LivelineMessaging
import Logging

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift, Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// Connects to the broker. A long-running role passes `retry`, so it waits for a broker
/// that is not up yet; a one-shot command fails at once and says why.
public func connect(
    _ configuration: AMQPConfiguration, as name: String, logger: Logger, retry: StartupRetry? = nil
) async throws -> AMQPConnection {
    var configuration = configuration
    configuration.connectionName = "liveline-\(name)"
    guard let retry else { return try await AMQPConnection.connect(configuration, logger: logger) }
    return try await retry.run("broker (\(name))", logger: logger) {
        try await AMQPConnection.connect(configuration, logger: logger)
    }
}

/// Connects something that publishes into the pipeline from outside the workers (the api's
/// events, `publish`, `dlq replay`, a user's erasure), once the broker has the topology it
/// publishes into. A fresh broker gets it declared, so what is published waits in its queues
/// for the workers. A broker laid out for other shard counts is refused, naming the setting:
/// declaring this layout beside it would split an activity's messages over two layouts, and
/// without the declare a publish into an exchange that does not exist would close the channel
/// on every try.
public func connectPublisher(
    _ configuration: AMQPConfiguration, topology: LivelineTopology, as name: String, logger: Logger
) async throws -> AMQPConnection {
    let connection = try await connect(configuration, as: name, logger: logger)
    do {
        try await topology.checkShardCounts(on: connection)
        try await connection.declare(topology.amqp)
        return connection
    } catch {
        await connection.close()
        throw error
    }
}

/// Runs `body` with a publisher from ``connectPublisher(_:topology:as:logger:)``, and closes
/// it after, whether `body` threw or not.
public func withPublisher<T>(
    _ configuration: AMQPConfiguration, topology: LivelineTopology, as name: String, logger: Logger,
    _ body: (AMQPConnection) async throws -> T
) async throws -> T {
    let connection = try await connectPublisher(configuration, topology: topology, as: name, logger: logger)
    do {
        let result = try await body(connection)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}
