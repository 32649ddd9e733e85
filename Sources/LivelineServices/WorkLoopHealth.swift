import Synchronization

// Tests: Tests/LivelineRuntimeTests/OpsEndpointsTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// Whether a worker's loop is alive, for `/healthz`: it finished work recently, or it holds
/// none (idle with nothing to do is healthy). A loop with work in hand and no progress for
/// ``stallAfter`` is stuck, and the orchestrator should restart it.
///
/// The loop reports with ``began(_:)`` when it takes work and ``finished(_:)`` when it
/// settles it (ack or requeue); nothing else reads the clock.
public final class WorkLoopHealth: Sendable {
    private struct State {
        var inFlight = 0
        var lastProgress = ContinuousClock.now
    }

    private let state = Mutex(State())
    /// How long work may stay in hand without any of it finishing.
    public let stallAfter: Duration

    public init(stallAfter: Duration = .seconds(60)) {
        self.stallAfter = stallAfter
    }

    /// The loop took `count` messages.
    public func began(_ count: Int = 1) {
        state.withLock { state in
            // Work arriving after an idle spell starts the stall clock now, not at the last finish.
            if state.inFlight == 0 { state.lastProgress = ContinuousClock.now }
            state.inFlight += count
        }
    }

    /// The loop settled `count` messages.
    public func finished(_ count: Int = 1) {
        state.withLock { state in
            state.inFlight = max(0, state.inFlight - count)
            state.lastProgress = ContinuousClock.now
        }
    }

    /// The loop made progress on work it still holds (a page of a long batch).
    public func progressed() {
        state.withLock { $0.lastProgress = ContinuousClock.now }
    }

    /// What `/healthz` reports.
    public struct Status: Sendable, Hashable {
        public var alive: Bool
        public var inFlight: Int
        public var sinceProgress: Duration
    }

    public var status: Status {
        state.withLock { state in
            let since = ContinuousClock.now - state.lastProgress
            return Status(alive: state.inFlight == 0 || since < stallAfter, inFlight: state.inFlight, sinceProgress: since)
        }
    }
}
