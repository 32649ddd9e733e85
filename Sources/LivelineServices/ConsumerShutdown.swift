import LivelineAMQP
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/DeadLetterPipelineTests.swift, Tests/LivelineRuntimeTests/ServiceGraphTests.swift

extension AMQPConsumer {
    /// Waits for graceful shutdown (or the task's cancellation), then cancels the consumer:
    /// `basic.cancel`, so nothing new arrives and its deliveries end once those received are
    /// handed out. The work loop taking them then drains and returns.
    func cancelAtGracefulShutdown() async {
        try? await gracefulShutdown()
        await cancel()
    }
}

/// Waits until each connection is up (a role's connections open in its group, beside the
/// services that use them), and returns false, having waited no longer, when the service is
/// told to stop first: a worker told to stop while its broker is still not up stops at once,
/// rather than when its drain times out. Throws why a connection never came up.
func brokersOpened(_ connections: [AMQPConnection?]) async throws -> Bool {
    do {
        try await cancelWhenGracefulShutdown {
            for case let connection? in connections { try await connection.opened() }
        }
    } catch is CancellationError where Task.isShuttingDownGracefully {
        return false
    }
    return !Task.isShuttingDownGracefully
}
