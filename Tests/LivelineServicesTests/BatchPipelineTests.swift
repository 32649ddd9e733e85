@testable import LivelineServices
import Testing

/// The translator's batch pipeline as a state machine: every transition, on instants of the
/// test's own, with no broker or store.
@Suite struct BatchPipelineTests {
    typealias Action = BatchPipeline.Action
    let t0 = ContinuousClock.now
    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(milliseconds)) }

    func pipeline() -> BatchPipeline { BatchPipeline(maximumInFlight: 3, failureBackoff: .milliseconds(500)) }

    /// Batch 1 storing (since 1 ms), batch 2 being planned on it (since 2 ms).
    func secondPlanningWhileFirstStores() -> BatchPipeline {
        var machine = pipeline()
        _ = machine.start()
        _ = machine.received(1, now: at(0))
        _ = machine.planned(1, succeeded: true, now: at(1))
        _ = machine.received(2, now: at(2))
        return machine
    }

    @Test func oneBatchGoesThroughEveryStepThenTheConsumerEnds() {
        var machine = pipeline()
        #expect(machine.start() == [.receive])
        // Planning the first batch starts receiving the second.
        #expect(machine.received(1, now: at(0)) == [.plan(1, after: nil), .receive])
        #expect(machine.planned(1, succeeded: true, now: at(1)) == [.store(1)])
        #expect(machine.stored(1, succeeded: true, now: at(2)) == [.confirm(1)])
        #expect(machine.confirmed(1, succeeded: true, now: at(3)) == [.ack(1)])
        #expect(!machine.isFinished)
        #expect(machine.consumerEnded(now: at(4)) == [.finish])
        #expect(machine.isFinished)
    }

    @Test func theNextBatchIsPlannedOnTheOneStoringAndStoresOnlyOnceThatOneHasStored() {
        var machine = pipeline()
        _ = machine.start()
        _ = machine.received(1, now: at(0))
        _ = machine.planned(1, succeeded: true, now: at(1))
        // Batch 1's transaction runs; batch 2 arrives and is planned on its decisions.
        #expect(machine.received(2, now: at(2)) == [.plan(2, after: 1), .receive])
        #expect(machine.waiting == nil)
        // Planned before 1 stored: held, so transactions and submits stay in batch order.
        #expect(machine.planned(2, succeeded: true, now: at(3)) == [])
        // Batch 3 arrives meanwhile: it waits, as the planned batch still holds its place.
        #expect(machine.received(3, now: at(4)) == [])
        #expect(machine.waiting == 3)
        #expect(machine.stored(1, succeeded: true, now: at(5)) == [.confirm(1), .store(2), .plan(3, after: 2), .receive])
    }

    @Test func aFailedTransactionRequeuesItsBatchAndTheBatchPlannedOnIt() {
        var machine = secondPlanningWhileFirstStores()
        _ = machine.planned(2, succeeded: true, now: at(3))
        _ = machine.received(3, now: at(4))
        // Batch 2 was planned on batch 1's decisions, which were never stored.
        #expect(machine.stored(1, succeeded: false, now: at(10)) == [
            .requeue(1, .store), .pause(until: at(510)), .requeue(2, .plannedOnFailedBatch),
        ])
        // Nothing new during the back-off; an early wake-up changes nothing.
        #expect(machine.resume(now: at(300)) == [])
        #expect(machine.resume(now: at(510)) == [.plan(3, after: nil), .receive])
        #expect(machine.planned(3, succeeded: true, now: at(520)) == [.store(3)])
    }

    @Test func aBatchPlannedAfterTheFailedOneStoredIsNotRequeued() {
        var machine = pipeline()
        _ = machine.start()
        _ = machine.received(1, now: at(0))
        _ = machine.planned(1, succeeded: true, now: at(1))
        #expect(machine.stored(1, succeeded: true, now: at(2)) == [.confirm(1)])
        _ = machine.received(2, now: at(3))
        // Planned on nothing storing: batch 1's later confirm failure is no concern of its.
        #expect(machine.planned(2, succeeded: true, now: at(4)) == [.store(2)])
        #expect(machine.confirmed(1, succeeded: false, now: at(5)) == [.requeue(1, .confirm), .pause(until: at(505))])
        #expect(machine.stored(2, succeeded: true, now: at(6)) == [.confirm(2)])
        #expect(machine.confirmed(2, succeeded: true, now: at(7)) == [.ack(2)])
    }

    @Test func aFailedPlanRequeuesThatBatchOnlyAfterTheOneBeforeItStored() {
        var machine = secondPlanningWhileFirstStores()
        #expect(machine.planned(2, succeeded: false, now: at(3)) == [])
        #expect(machine.stored(1, succeeded: true, now: at(4)) == [.confirm(1), .requeue(2, .plan), .pause(until: at(504))])
        // The store that was fine is confirmed and acked as usual.
        #expect(machine.confirmed(1, succeeded: true, now: at(5)) == [.ack(1)])
    }

    @Test func confirmsComeBackInAnyOrderAndAtMostThreeBatchesAreInFlight() {
        var machine = pipeline()
        _ = machine.start()
        for id in 1...3 {
            _ = machine.received(id, now: at(id * 10))
            #expect(machine.planned(id, succeeded: true, now: at(id * 10 + 1)) == [.store(id)])
            #expect(machine.stored(id, succeeded: true, now: at(id * 10 + 2)) == [.confirm(id)])
        }
        // Three await their confirms: the fourth is planned, and held for a place.
        #expect(machine.received(4, now: at(40)) == [.plan(4, after: nil), .receive])
        #expect(machine.planned(4, succeeded: true, now: at(41)) == [])
        // The third confirms first: it is acked, and its place goes to the fourth.
        #expect(machine.confirmed(3, succeeded: true, now: at(42)) == [.ack(3), .store(4)])
        #expect(machine.confirmed(1, succeeded: true, now: at(43)) == [.ack(1)])
        #expect(machine.stored(4, succeeded: true, now: at(44)) == [.confirm(4)])
        #expect(machine.confirmed(4, succeeded: true, now: at(45)) == [.ack(4)])
        #expect(machine.confirmed(2, succeeded: true, now: at(46)) == [.ack(2)])
    }

    @Test func shutdownMidBatchFinishesAndSettlesEverythingReceivedFirst() {
        var machine = secondPlanningWhileFirstStores()
        // The consumer is cancelled: no more batches, but 1 is storing and 2 is planning.
        #expect(machine.consumerEnded(now: at(3)) == [])
        #expect(machine.planned(2, succeeded: true, now: at(4)) == [])
        #expect(machine.stored(1, succeeded: true, now: at(5)) == [.confirm(1), .store(2)])
        #expect(machine.stored(2, succeeded: true, now: at(6)) == [.confirm(2)])
        #expect(machine.confirmed(2, succeeded: true, now: at(7)) == [.ack(2)])
        #expect(!machine.isFinished)
        #expect(machine.confirmed(1, succeeded: true, now: at(8)) == [.ack(1), .finish])
    }

    @Test func aBatchReceivedBeforeTheConsumerEndedIsStillPlannedButNoReceiveFollows() {
        var machine = secondPlanningWhileFirstStores()
        _ = machine.planned(2, succeeded: true, now: at(3))
        // Batch 3 arrives, then the consumer ends while 2 still holds its place.
        _ = machine.received(3, now: at(4))
        #expect(machine.consumerEnded(now: at(5)) == [])
        #expect(machine.stored(1, succeeded: true, now: at(6)) == [.confirm(1), .store(2), .plan(3, after: 2)])
        #expect(machine.planned(3, succeeded: true, now: at(7)) == [])
        #expect(machine.stored(2, succeeded: true, now: at(8)) == [.confirm(2), .store(3)])
        #expect(machine.stored(3, succeeded: true, now: at(9)) == [.confirm(3)])
        #expect(machine.confirmed(1, succeeded: true, now: at(10)) == [.ack(1)])
        #expect(machine.confirmed(2, succeeded: true, now: at(11)) == [.ack(2)])
        #expect(machine.confirmed(3, succeeded: true, now: at(12)) == [.ack(3), .finish])
    }

    @Test func aConsumerThatEndsAtOnceFinishesAtOnce() {
        var machine = pipeline()
        _ = machine.start()
        #expect(machine.consumerEnded(now: at(0)) == [.finish])
    }

    @Test func aSecondFailureDuringTheBackOffLengthensItOnlyWhenItEndsLater() {
        var machine = pipeline()
        _ = machine.start()
        for id in 1...2 {
            _ = machine.received(id, now: at(id))
            _ = machine.planned(id, succeeded: true, now: at(id))
            _ = machine.stored(id, succeeded: true, now: at(id))
        }
        #expect(machine.confirmed(1, succeeded: false, now: at(100)) == [.requeue(1, .confirm), .pause(until: at(600))])
        #expect(machine.confirmed(2, succeeded: false, now: at(200)) == [.requeue(2, .confirm), .pause(until: at(700))])
        _ = machine.received(3, now: at(300))
        #expect(machine.resume(now: at(600)) == [])
        #expect(machine.resume(now: at(700)) == [.plan(3, after: nil), .receive])
    }
}
