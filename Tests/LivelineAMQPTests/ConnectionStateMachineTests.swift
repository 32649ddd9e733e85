import Testing

@testable import LivelineAMQP

/// The connection's decisions, driven with a manual clock and no broker. Publishes and
/// consumers are plain strings; the actions are compared whole.
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<ManualClock, String, String>

    let clock = ManualClock()
    let lost = AMQPError(.connectionLost, "socket closed")
    let refused = AMQPError(.connectionFailed, "cannot reach rabbit-1:5672: connection refused")

    /// Backoff 200 ms doubling up to 1 s; the jitter is fixed at its top so waits are exact.
    func machine(
        brokers: Int = 1, heartbeat: Duration = .zero, confirmTimeout: Duration = .zero, maxUnconfirmed: Int = 100,
        patience: Duration = .zero
    ) -> Machine {
        Machine(
            settings: .init(
                brokerCount: brokers, heartbeat: heartbeat, confirmTimeout: confirmTimeout,
                backoff: .init(initial: .milliseconds(200), maximum: .seconds(1)),
                maxUnconfirmedPublishes: maxUnconfirmed, firstConnectionPatience: patience, jitter: { 1 }),
            now: clock.now)
    }

    /// Starts the machine and opens the first connection on broker 0.
    func opened(
        brokers: Int = 1, heartbeat: Duration = .zero, confirmTimeout: Duration = .zero, maxUnconfirmed: Int = 100
    ) -> Machine {
        var machine = machine(
            brokers: brokers, heartbeat: heartbeat, confirmTimeout: confirmTimeout, maxUnconfirmed: maxUnconfirmed)
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(.init(topologies: [], consumers: [], resend: [], reconnected: false)))
        #expect(machine.restored(now: clock.now) == .none)
        #expect(machine.state == .open(broker: 0))
        return machine
    }

    func publishAll(_ machine: inout Machine) -> [UInt64: String] {
        var sent: [UInt64: String] = [:]
        while let (tag, publish, _) = machine.nextPublish() { sent[tag] = publish }
        return sent
    }

    // MARK: Connecting and reconnecting

    @Test func firstConnectionOpensAndShowsConnected() {
        let machine = opened()
        #expect(machine.publicState == .connected)
        #expect(machine.reconnects == 0)
    }

    @Test func firstConnectionTriesEachBrokerOnceWithoutWaitingThenFails() {
        var machine = machine(brokers: 3)
        machine.enqueue(["early"])
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        #expect(machine.connectFailed(refused, now: clock.now) == .connect(broker: 1))
        #expect(machine.connectFailed(refused, now: clock.now) == .connect(broker: 2))
        let last = AMQPError(.authenticationFailed, "the broker refused user guest")
        #expect(
            machine.connectFailed(last, now: clock.now)
                == .finish(.init(farewell: .none, failing: ["early"], consumers: [], startupError: last)))
        #expect(machine.publicState == .closed)
    }

    /// A worker's first connection waits for a broker that is still starting: round after
    /// round of the brokers, with the reconnect backoff between rounds. It is still the first
    /// connection when it opens, and what was queued meanwhile goes out on it.
    @Test func theFirstConnectionWaitsForTheBrokerWithinItsPatience() {
        var machine = machine(brokers: 2, patience: .seconds(2))
        machine.enqueue(["early"])
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        #expect(machine.connectFailed(refused, now: clock.now) == .connect(broker: 1))
        #expect(machine.connectFailed(refused, now: clock.now) == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(200))))
        #expect(machine.publicState == .connecting, "still the first connection, not a reconnect")
        clock.advance(by: .milliseconds(200))
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 0))
        #expect(machine.connectFailed(refused, now: clock.now) == .connect(broker: 1))
        #expect(machine.connectFailed(refused, now: clock.now) == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(400))))
        clock.advance(by: .milliseconds(400))
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 0))
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(.init(topologies: [], consumers: [], resend: [], reconnected: false)))
        #expect(machine.restored(now: clock.now) == .none)
        #expect(machine.state == .open(broker: 0))
        #expect(machine.reconnects == 0)
        #expect(machine.nextPublish()?.publish == "early")
    }

    @Test func theFirstConnectionFailsWhenTheNextWaitWouldPassItsPatience() {
        var machine = machine(patience: .milliseconds(500))
        machine.enqueue(["early"])
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        #expect(machine.connectFailed(refused, now: clock.now) == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(200))))
        clock.advance(by: .milliseconds(200))
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 0))
        // The next wait, 400 ms, would end at 600 ms, past the patience of 500.
        #expect(
            machine.connectFailed(refused, now: clock.now)
                == .finish(.init(farewell: .none, failing: ["early"], consumers: [], startupError: refused)))
        #expect(machine.publicState == .closed)
    }

    @Test func refusedCredentialsEndThePatienceAtOnce() {
        var machine = machine(patience: .seconds(60))
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        let denied = AMQPError(.authenticationFailed, "the broker refused user guest")
        #expect(
            machine.connectFailed(denied, now: clock.now)
                == .finish(.init(farewell: .none, failing: [], consumers: [], startupError: denied)))
    }

    @Test func closeWhileTheFirstConnectionWaitsFailsWhatWasQueued() {
        var machine = machine(patience: .seconds(60))
        machine.enqueue(["early"])
        #expect(machine.start(now: clock.now) == .connect(broker: 0))
        #expect(machine.connectFailed(refused, now: clock.now) == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(200))))
        #expect(
            machine.closeRequested(grace: .seconds(5), now: clock.now)
                == .finish(.init(farewell: .none, failing: ["early"], consumers: [], startupError: nil)))
    }

    @Test func lostConnectionReconnectsWithBackoffRotatingBrokers() {
        var machine = opened(brokers: 3)
        #expect(
            machine.connectionLost(lost, now: clock.now)
                == .reconnect(.init(dropping: lost, broker: 1, after: .milliseconds(200))))
        #expect(machine.publicState == .reconnecting(attempt: 0, lastError: lost.description))

        clock.advance(by: .milliseconds(200))
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 1))
        #expect(
            machine.connectFailed(refused, now: clock.now)
                == .reconnect(.init(dropping: nil, broker: 2, after: .milliseconds(400))))
        #expect(machine.state == .reconnecting(broker: 2, attempt: 1, lastError: refused))

        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 2))
        #expect(
            machine.connectFailed(refused, now: clock.now)
                == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(800))))
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 0))
        // The wait is capped at the maximum.
        #expect(
            machine.connectFailed(refused, now: clock.now)
                == .reconnect(.init(dropping: nil, broker: 1, after: .seconds(1))))
        #expect(machine.publicState == .reconnecting(attempt: 3, lastError: refused.description))

        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 1))
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(.init(topologies: [], consumers: [], resend: [], reconnected: true)))
        #expect(machine.publicState == .reconnecting(attempt: 3, lastError: refused.description), "not open before restored")
        #expect(machine.restored(now: clock.now) == .none)
        #expect(machine.state == .open(broker: 1))
        #expect(machine.reconnects == 1)
    }

    @Test func failedRestoreCountsAsAFailedAttempt() {
        var machine = opened(brokers: 2)
        _ = machine.connectionLost(lost, now: clock.now)
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 1))
        _ = machine.connectionEstablished(now: clock.now)
        let conflict = AMQPError(.channelClosed, "declare queue q: PRECONDITION_FAILED")
        #expect(
            machine.connectFailed(conflict, now: clock.now)
                == .reconnect(.init(dropping: nil, broker: 0, after: .milliseconds(400))))
        #expect(machine.reconnects == 0)
    }

    // MARK: Publishing across reconnects

    @Test func unconfirmedPublishesGoOutAgainFirstAfterReconnect() {
        var machine = opened()
        machine.enqueue(["a", "b", "c"])
        #expect(publishAll(&machine) == [1: "a", 2: "b", 3: "c"])
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("a")])
        machine.enqueue(["d"])

        _ = machine.connectionLost(lost, now: clock.now)
        #expect(machine.nextPublish() == nil, "nothing goes out while reconnecting")
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 0))
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(.init(topologies: [], consumers: [], resend: ["b", "c"], reconnected: true)))
        #expect(machine.nextPublish() == nil, "nothing goes out before topologies and consumers are back")
        _ = machine.restored(now: clock.now)

        // Tags restart at 1 on the new channel; the resends keep their order, ahead of "d".
        #expect(publishAll(&machine) == [1: "b", 2: "c", 3: "d"])
        #expect(machine.publishConfirmed(tag: 2, multiple: true) == [.confirmed("b"), .confirmed("c")])
        #expect(machine.publishNacked(tag: 3, multiple: false) == [.nacked("d")])
        #expect(machine.unconfirmedCount == 0)
    }

    @Test func resendsAreFlaggedAcrossASecondLossAndFreshPublishesAreNot() {
        var machine = opened()
        machine.enqueue(["a", "b"])
        _ = publishAll(&machine)
        machine.enqueue(["c"])
        _ = machine.connectionLost(lost, now: clock.now)
        _ = machine.backoffElapsed(now: clock.now)
        _ = machine.connectionEstablished(now: clock.now)
        _ = machine.restored(now: clock.now)
        // "a" goes out again, then the connection is lost before "b" could.
        #expect(machine.nextPublish()! == (1, "a", true))
        _ = machine.connectionLost(lost, now: clock.now)
        _ = machine.backoffElapsed(now: clock.now)
        _ = machine.connectionEstablished(now: clock.now)
        _ = machine.restored(now: clock.now)
        var sent: [(String, Bool)] = []
        while let (_, publish, resent) = machine.nextPublish() { sent.append((publish, resent)) }
        #expect(sent.map(\.0) == ["a", "b", "c"])
        #expect(sent.map(\.1) == [true, true, false], "only what went out on a lost connection is a resend")
    }

    @Test func theUnconfirmedLimitHoldsPublishesBack() {
        var machine = opened(maxUnconfirmed: 2)
        machine.enqueue(["a", "b", "c"])
        #expect(publishAll(&machine) == [1: "a", 2: "b"])
        #expect(machine.canPublish == false)
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("a")])
        #expect(publishAll(&machine) == [3: "c"])
    }

    @Test func aReturnFailsTheOldestMatchingPublishWhenItIsConfirmed() {
        var machine = opened()
        machine.enqueue(["x", "y", "x"])
        _ = publishAll(&machine)
        let unroutable = AMQPError(.unroutable, "no queue is bound")
        machine.publishReturned(unroutable) { $0 == "x" }
        machine.publishReturned(unroutable) { $0 == "x" }
        #expect(
            machine.publishConfirmed(tag: 3, multiple: true)
                == [.returned("x", unroutable), .confirmed("y"), .returned("x", unroutable)])
    }

    @Test func aReturnIsForgottenWithTheConnection() {
        var machine = opened()
        machine.enqueue(["x"])
        _ = publishAll(&machine)
        machine.publishReturned(AMQPError(.unroutable, "no queue is bound")) { $0 == "x" }
        _ = machine.connectionLost(lost, now: clock.now)
        _ = machine.backoffElapsed(now: clock.now)
        _ = machine.connectionEstablished(now: clock.now)
        _ = machine.restored(now: clock.now)
        #expect(publishAll(&machine) == [1: "x"])
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("x")])
    }

    // MARK: Consumers and topologies

    @Test func consumersAndTopologiesAreRestoredAfterReconnect() {
        var machine = opened()
        let events = AMQPTopology(
            exchanges: [.init("events", kind: .topic)], queues: [.init("translate"), .init("scratch")],
            bindings: [.init(queue: "translate", exchange: "events", routingKey: "#"), .init(queue: "scratch", exchange: "events", routingKey: "#")])
        let dead = AMQPTopology(queues: [.init("dead")])
        machine.topologyDeclared(events)
        machine.topologyDeclared(dead)
        machine.queueDeleted("scratch")
        machine.consumerRegistered(id: 2, "consumer of dead")
        machine.consumerRegistered(id: 1, "consumer of translate")
        machine.consumerRegistered(id: 3, "cancelled")
        #expect(machine.consumerRemoved(id: 3) == "cancelled")

        _ = machine.connectionLost(lost, now: clock.now)
        _ = machine.backoffElapsed(now: clock.now)
        let kept = AMQPTopology(
            exchanges: [.init("events", kind: .topic)], queues: [.init("translate")],
            bindings: [.init(queue: "translate", exchange: "events", routingKey: "#")])
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(
                    .init(
                        topologies: [kept, dead], consumers: ["consumer of translate", "consumer of dead"], resend: [],
                        reconnected: true)))
    }

    // MARK: Heartbeats

    @Test func heartbeatsGoOutAtHalfTheIntervalAndSilenceIsLostAfterTwo() {
        var machine = opened(heartbeat: .seconds(2))
        clock.advance(by: .seconds(1))
        #expect(machine.tick(now: clock.now) == .sendHeartbeat)
        machine.inboundActivity(now: clock.now)
        clock.advance(by: .milliseconds(500))
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .milliseconds(3500))
        // Exactly two intervals of silence is still alive.
        #expect(machine.tick(now: clock.now) == .sendHeartbeat)
        clock.advance(by: .milliseconds(1))
        let timeout = AMQPError(.heartbeatTimeout, "no data from the broker for 4 s (heartbeat 2 s)")
        #expect(
            machine.tick(now: clock.now)
                == .reconnect(.init(dropping: timeout, broker: 0, after: .milliseconds(200))))
        #expect(machine.state == .reconnecting(broker: 0, attempt: 0, lastError: timeout))
        #expect(machine.tick(now: clock.now) == .none, "no heartbeats without a connection")
    }

    @Test func heartbeatsOffMeansNoExpiry() {
        var machine = opened(heartbeat: .zero)
        clock.advance(by: .seconds(3600))
        #expect(machine.tick(now: clock.now) == .none)
    }

    // MARK: Confirms that never come

    /// The reconnect a 30 s confirm timeout asks for when the oldest of `count` publishes waited `seconds`.
    func overdue(_ count: Int, waited seconds: Int, to broker: Int) -> Machine.Action {
        let error = AMQPError(
            .confirmTimeout,
            "the oldest of \(count) unconfirmed publishes waited \(seconds) s for its confirm (confirm timeout 30 s)")
        return .reconnect(.init(dropping: error, broker: broker, after: .milliseconds(200)))
    }

    @Test func anOverdueConfirmReplacesTheConnectionAndSendsAgainFirst() {
        var machine = opened(brokers: 2, confirmTimeout: .seconds(30))
        machine.enqueue(["a", "b"])
        #expect(publishAll(&machine) == [1: "a", 2: "b"])
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(30))
        #expect(machine.tick(now: clock.now) == .none, "exactly the timeout is still waiting")
        clock.advance(by: .milliseconds(1))
        #expect(machine.tick(now: clock.now) == overdue(2, waited: 30, to: 1))
        #expect(machine.unconfirmedCount == 0)
        #expect(machine.backoffElapsed(now: clock.now) == .connect(broker: 1))
        #expect(
            machine.connectionEstablished(now: clock.now)
                == .restore(.init(topologies: [], consumers: [], resend: ["a", "b"], reconnected: true)))
        _ = machine.restored(now: clock.now)
        #expect(publishAll(&machine) == [1: "a", 2: "b"])
        clock.advance(by: .seconds(20))
        #expect(machine.tick(now: clock.now) == .none, "the clock starts again on the new connection")
    }

    @Test func oneStuckPublishIsCaughtWhileOthersAreConfirmed() {
        var machine = opened(confirmTimeout: .seconds(30))
        machine.enqueue(["stuck", "b"])
        _ = publishAll(&machine)
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(20))
        #expect(machine.publishConfirmed(tag: 2, multiple: false) == [.confirmed("b")])
        machine.enqueue(["c"])
        _ = publishAll(&machine)
        clock.advance(by: .seconds(11))
        #expect(machine.tick(now: clock.now) == overdue(2, waited: 31, to: 0))
    }

    @Test func eachConfirmRestartsTheWaitForTheNextOldest() {
        var machine = opened(confirmTimeout: .seconds(30))
        machine.enqueue(["a", "b"])
        _ = publishAll(&machine)
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(25))
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("a")])
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(25))
        #expect(machine.tick(now: clock.now) == .none, "b has been the oldest for 25 s")
        clock.advance(by: .seconds(6))
        #expect(machine.tick(now: clock.now) == overdue(1, waited: 31, to: 0))
    }

    @Test func aBlockedBrokerStopsTheConfirmClock() {
        var machine = opened(confirmTimeout: .seconds(30))
        machine.enqueue(["a"])
        _ = publishAll(&machine)
        #expect(machine.tick(now: clock.now) == .none)
        machine.brokerBlocked()
        clock.advance(by: .seconds(600))
        #expect(machine.tick(now: clock.now) == .none, "a resource alarm is a wait, not a fault")
        machine.brokerUnblocked()
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(30))
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(1))
        #expect(machine.tick(now: clock.now) == overdue(1, waited: 31, to: 0))
    }

    @Test func noConfirmTimeoutWaitsForEver() {
        var machine = opened()
        machine.enqueue(["a"])
        _ = publishAll(&machine)
        #expect(machine.tick(now: clock.now) == .none)
        clock.advance(by: .seconds(3600))
        #expect(machine.tick(now: clock.now) == .none)
        #expect(machine.unconfirmedCount == 1)
    }

    // MARK: Blocked

    @Test func blockedBrokerHoldsPublishesUntilUnblocked() {
        var machine = opened()
        machine.enqueue(["a"])
        machine.brokerBlocked()
        #expect(machine.state == .blocked(broker: 0))
        #expect(machine.isBlocked)
        #expect(machine.publicState == .connected, "a blocked connection is not a broken one")
        #expect(machine.nextPublish() == nil)
        machine.brokerUnblocked()
        #expect(machine.state == .open(broker: 0))
        #expect(publishAll(&machine) == [1: "a"])
    }

    @Test func aNewConnectionIsNotBlocked() {
        var machine = opened(brokers: 2)
        machine.brokerBlocked()
        #expect(
            machine.connectionLost(lost, now: clock.now)
                == .reconnect(.init(dropping: lost, broker: 1, after: .milliseconds(200))))
        #expect(!machine.isBlocked)
        _ = machine.backoffElapsed(now: clock.now)
        _ = machine.connectionEstablished(now: clock.now)
        _ = machine.restored(now: clock.now)
        #expect(machine.state == .open(broker: 1))
    }

    // MARK: Closing

    @Test func closeWhileReconnectingFailsEverythingAtOnce() {
        var machine = opened()
        machine.consumerRegistered(id: 1, "consumer")
        machine.enqueue(["sent", "queued"])
        #expect(machine.nextPublish()! == (1, "sent", false))
        _ = machine.connectionLost(lost, now: clock.now)
        #expect(
            machine.closeRequested(grace: .seconds(5), now: clock.now)
                == .finish(.init(farewell: .none, failing: ["sent", "queued"], consumers: ["consumer"], startupError: nil)))
        #expect(machine.state == .closed)
        #expect(machine.backoffElapsed(now: clock.now) == .none, "a late backoff connects nothing")
        #expect(machine.tick(now: clock.now) == .none)
    }

    @Test func closeWaitsForPendingConfirmsUntilTheGraceEnds() {
        var machine = opened()
        machine.consumerRegistered(id: 1, "consumer")
        machine.enqueue(["a", "b"])
        _ = publishAll(&machine)
        #expect(machine.closeRequested(grace: .seconds(5), now: clock.now) == .none)
        #expect(machine.state == .closing(broker: 0, deadline: clock.now.advanced(by: .seconds(5)), blocked: false))
        #expect(machine.publicState == .connected)
        #expect(machine.closeRequested(grace: .seconds(1), now: clock.now) == .none, "a second request changes nothing")

        clock.advance(by: .seconds(1))
        #expect(machine.tick(now: clock.now) == .none)
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("a")])
        clock.advance(by: .seconds(4))
        #expect(
            machine.tick(now: clock.now)
                == .finish(.init(farewell: .close, failing: ["b"], consumers: ["consumer"], startupError: nil)))
        #expect(machine.publicState == .closed)
    }

    @Test func closeFinishesAsSoonAsTheLastConfirmArrives() {
        var machine = opened()
        machine.enqueue(["a"])
        _ = publishAll(&machine)
        #expect(machine.closeRequested(grace: .seconds(5), now: clock.now) == .none)
        #expect(machine.publishConfirmed(tag: 1, multiple: false) == [.confirmed("a")])
        #expect(machine.tick(now: clock.now) == .finish(.init(farewell: .close, failing: [], consumers: [], startupError: nil)))
    }

    @Test func queuedPublishesStillGoOutWhileClosing() {
        var machine = opened()
        machine.enqueue(["a"])
        #expect(machine.closeRequested(grace: .seconds(5), now: clock.now) == .none)
        #expect(publishAll(&machine) == [1: "a"])
    }

    @Test func closeWithNothingPendingFinishesAtOnce() {
        var machine = opened()
        #expect(
            machine.closeRequested(grace: .seconds(5), now: clock.now)
                == .finish(.init(farewell: .close, failing: [], consumers: [], startupError: nil)))
    }

    @Test func lostWhileClosingFinishesWithoutReconnecting() {
        var machine = opened()
        machine.enqueue(["a"])
        _ = publishAll(&machine)
        _ = machine.closeRequested(grace: .seconds(5), now: clock.now)
        #expect(
            machine.connectionLost(lost, now: clock.now)
                == .finish(.init(farewell: .drop, failing: ["a"], consumers: [], startupError: nil)))
    }
}
