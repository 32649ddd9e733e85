import LivelineAMQP
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/DeadLetterPipelineTests.swift

extension AMQPConsumer {
    /// Waits for graceful shutdown (or the task's cancellation), then cancels the consumer:
    /// `basic.cancel`, so nothing new arrives and its deliveries end once those received are
    /// handed out. The work loop taking them then drains and returns.
    func cancelAtGracefulShutdown() async {
        try? await gracefulShutdown()
        await cancel()
    }
}
