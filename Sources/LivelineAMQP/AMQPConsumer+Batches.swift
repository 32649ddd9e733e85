// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

extension AMQPConsumer {
    /// The next batch of deliveries: everything received, up to `maxSize`, after waiting
    /// for the first and then, while fewer than `maxSize` are there, at most `linger` for
    /// stragglers, as long as some arrive in every `quiet` step (by default the whole
    /// linger is one step). After a batch that lingered to the end and still was short, the
    /// next lingers to the end too: the connection reads its socket once then, not at every
    /// delivery.
    ///
    /// Nil once the consumer ended (cancelled, or the connection closed) and every delivery
    /// was handed out, or when the calling task is cancelled; throws the consumer's error
    /// (``AMQPError/Code/consumerCancelled``) after the last delivery. With a prefetch above
    /// `maxSize`, the next batch is being received while the current one is processed.
    ///
    /// Take batches from one task at a time, and do not also iterate the consumer: both
    /// take from the same deliveries.
    public func nextBatch(maxSize: Int, linger: Duration, quiet: Duration? = nil) async throws -> [AMQPDelivery]? {
        try await buffer.take(atMost: Swift.max(1, maxSize), linger: linger, quiet: quiet)
    }
}
