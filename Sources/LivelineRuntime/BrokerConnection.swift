import LivelineAMQP
import LivelineMessaging
import Logging
import ServiceLifecycle

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift, Tests/LivelineRuntimeTests/EventIntakeTests.swift, Tests/LivelineRuntimeTests/ServiceGraphTests.swift

/// One of a role's broker connections, as a service of the role's group. It opens when the
/// group runs, waiting for a broker that is still starting (its
/// ``AMQPConfiguration/firstConnectionPatience``), and closes when the group stops it. A group
/// stops its services in the reverse of their order, so a connection listed before the
/// services that use it closes only once they have drained and acked. What they ask of it
/// before it is up waits for it.
struct BrokerConnectionService: Service {
    let connection: AMQPConnection

    func run() async throws {
        do {
            // Told to stop while the broker is still not up, it stops waiting.
            try await cancelWhenGracefulShutdown { [connection] in try await connection.open() }
        } catch is CancellationError where Task.isShuttingDownGracefully {
        } catch {
            await connection.close()
            throw error
        }
        try? await gracefulShutdown()
        await connection.close()
    }
}

/// Connects a one-shot command (or the api, per use) to the broker, named `liveline-<name>`
/// as the broker's management shows it: a broker that is not there fails it at once, saying
/// why. The long-running roles' connections wait for theirs instead (``BrokerConnectionService``).
public func connect(_ configuration: AMQPConfiguration, as name: String, logger: Logger) async throws -> AMQPConnection {
    var configuration = configuration
    configuration.connectionName = "liveline-\(name)"
    return try await AMQPConnection.connect(configuration, logger: logger)
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
