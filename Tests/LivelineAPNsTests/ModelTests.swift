import Foundation
@testable import LivelineAPNs
import LivelineCodecs
import Testing

@Suite("Reasons and outcome classification")
struct ModelTests {
    @Test("every documented reason round-trips; unknown ones are kept verbatim")
    func reasonsRoundTrip() {
        for reason in APNsReason.allKnown {
            #expect(APNsReason(rawValue: reason.rawValue) == reason)
        }
        #expect(APNsReason.allKnown.count >= 32)
        #expect(APNsReason(rawValue: "Unregistered") == .unregistered)
        #expect(APNsReason(rawValue: "BrandNew") == .unknown("BrandNew"))
        #expect(APNsReason(rawValue: "BrandNew").rawValue == "BrandNew")
    }

    @Test("classification follows DESIGN.md §5")
    func classification() {
        #expect(APNsOutcome.classify(status: 200, reason: nil) == .success)
        #expect(APNsOutcome.classify(status: 410, reason: .unregistered) == .tokenInvalid)
        #expect(APNsOutcome.classify(status: 410, reason: .expiredToken) == .tokenInvalid)
        #expect(APNsOutcome.classify(status: 400, reason: .badDeviceToken) == .tokenInvalid)
        #expect(APNsOutcome.classify(status: 400, reason: .deviceTokenNotForTopic) == .tokenInvalid)
        #expect(APNsOutcome.classify(status: 400, reason: .badPriority) == .permanent)
        #expect(APNsOutcome.classify(status: 413, reason: .payloadTooLarge) == .permanent)
        #expect(APNsOutcome.classify(status: 429, reason: .tooManyRequests) == .throttled)
        #expect(APNsOutcome.classify(status: 429, reason: .tooManyProviderTokenUpdates) == .providerToken)
        #expect(APNsOutcome.classify(status: 403, reason: .expiredProviderToken) == .providerToken)
        #expect(APNsOutcome.classify(status: 500, reason: .internalServerError) == .retriable)
        #expect(APNsOutcome.classify(status: 503, reason: .serviceUnavailable) == .retriable)
    }
}

@Suite("Connection pool state machine (no I/O)")
struct ConnectionPoolStateMachineTests {
    @Test("waits for a stream slot, opens connections lazily up to the cap, hands slots over on release")
    func leaseAndRelease() {
        var machine = ConnectionPoolStateMachine(maximumConnections: 2)
        guard case .wait(let first) = machine.lease(waiter: 1) else {
            Issue.record("no connection yet: must wait")
            return
        }
        #expect(first.startConnection == 0)
        // A second waiter does not open a second connection while one is still connecting.
        guard case .wait(let second) = machine.lease(waiter: 2) else { return }
        #expect(second.startConnection == nil)

        // APNs grants one stream at first.
        let ready = machine.connectionReady(0, maximumStreams: 1)
        #expect(ready.handOffs.map(\.waiter) == [1])
        #expect(ready.startConnection == 1, "still a waiter and room for a second connection")

        let released = machine.release(0)
        #expect(released.handOffs.map(\.waiter) == [2])

        let raised = machine.maximumStreamsChanged(0, to: 10)
        #expect(raised.handOffs.isEmpty)
        #expect(machine.leaseImmediately() == 0)
    }

    @Test("GOAWAY drains: no new streams, closed when idle; failed connects fail waiters")
    func goAwayAndConnectFailure() {
        var machine = ConnectionPoolStateMachine(maximumConnections: 1)
        _ = machine.lease(waiter: 1)
        _ = machine.connectionReady(0, maximumStreams: 5)
        let draining = machine.goingAway(0)
        #expect(draining.close.isEmpty, "one stream still in flight")
        #expect(machine.leaseImmediately() == nil)
        guard case .wait(let waiting) = machine.lease(waiter: 2) else { return }
        #expect(waiting.startConnection == 1, "a draining connection does not count against the cap")
        #expect(machine.release(0).close == [0])
        let failed = machine.closed(1)
        #expect(failed.fail == [2])
    }
}

@Suite("Small pieces")
struct SmallPiecesTests {
    @Test("the hand-rolled apns-id formatter matches Foundation's uuidString")
    func canonicalUUID() {
        for _ in 0..<100 {
            let id = UUID()
            #expect(id.hyphenated() == id.uuidString)
        }
    }

    @Test("ExpiredProviderToken reports only count for the token that is current")
    func cadenceStateMachine() {
        var cadence = ProviderTokenCadence()
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(cadence.decide(now: start) == .mint)
        let token = APNsProviderToken(jwt: "a.b.c", issuedAt: start)
        cadence.minted(token)
        #expect(cadence.decide(now: start.addingTimeInterval(60)) == .use(token))
        let stale = cadence.invalidate(ifIssuedAt: start.addingTimeInterval(-1))
        #expect(!stale)
        let first = cadence.invalidate(ifIssuedAt: start)
        #expect(first)
        let second = cadence.invalidate(ifIssuedAt: start)
        #expect(!second, "a second report for the same token changes nothing")
        #expect(cadence.decide(now: start.addingTimeInterval(19 * 60)) == .use(token))
        #expect(cadence.decide(now: start.addingTimeInterval(20 * 60)) == .mint)
    }
}
