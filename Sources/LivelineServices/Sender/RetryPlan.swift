import LivelineMessaging

// Tests: Tests/LivelineServicesTests/SenderDecisionTests.swift

/// Where a job goes when it must be tried again: the next TTL tier, or the dead-letter
/// queue once every tier was used.
public enum RetryPlan: Hashable, Sendable {
    /// Publish to the retry exchange with this tier's routing key; the job then carries
    /// `attempt` in ``SenderHeaders/attempt``.
    case tier(LivelineTopology.RetryTier, attempt: Int)
    /// Every tier was tried: dead-letter with `retries-exhausted`.
    case exhausted(attempts: Int)

    /// The plan after a failed attempt. `attempt` is how many attempts came before this
    /// one (0 on the first send), so the first failure waits in the first tier.
    ///
    /// - Parameter atLeast: a minimum wait (a throttled token's remaining back-off); the
    ///   first tier at or past both the attempt's tier and this wait is chosen.
    public static func after(
        attempt: Int, tiers: [LivelineTopology.RetryTier], atLeast minimumWait: Duration = .zero
    ) -> RetryPlan {
        let nextAttempt = attempt + 1
        guard attempt < tiers.count else { return .exhausted(attempts: nextAttempt) }
        var index = attempt
        while index < tiers.count - 1, tiers[index].delay < minimumWait { index += 1 }
        return .tier(tiers[index], attempt: nextAttempt)
    }

    /// The plan for a job held back unsent because its token is backing off: the first
    /// tier that covers `wait` (the last if none does), with the attempt count unchanged,
    /// since nothing was sent. The back-off is bounded and only a real 429 (which does
    /// count) extends it, so this cannot loop for ever.
    public static func deferral(
        attempt: Int, tiers: [LivelineTopology.RetryTier], wait: Duration
    ) -> RetryPlan {
        guard let last = tiers.last else { return .exhausted(attempts: attempt) }
        return .tier(tiers.first { $0.delay >= wait } ?? last, attempt: attempt)
    }
}
