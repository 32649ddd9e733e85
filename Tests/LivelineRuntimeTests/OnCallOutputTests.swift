import Foundation
import LivelineRuntime
import LivelineServices
import LivelineStore
import Testing

@Suite("On-call output")
struct OnCallOutputTests {
    static let t0 = Date(millisecondsSince1970: 1_795_000_000_120)
    static let token = String(repeating: "ab", count: 32)

    static var letter: DeadLetterRecord {
        DeadLetterRecord(
            id: "d-1", reason: "delivery_limit", source: .broker, message: "the broker dead-lettered it", domain: "ride",
            activityID: "r-1", eventID: "e-1", payloadKind: .event,
            body: Data(#"{"id":"e-1","type":"ride.status"}"#.utf8), routingKey: "ride.status", attempts: 11,
            firstFailedAt: t0, lastFailedAt: t0.addingTimeInterval(2), keptAt: t0.addingTimeInterval(3),
            deaths: [.init(queue: "liveline.translate", reason: "delivery_limit", count: 1, exchange: "liveline.events",
                           routingKeys: ["ride.status"], time: t0.addingTimeInterval(2))])
    }

    @Test func listIsATableNewestFirstThenCountsPerReason() {
        #expect(DeadLetterListing.text([Self.letter], counts: ["delivery_limit": 1, "BadDeviceToken": 3]) == """
            LAST FAILED (UTC)         ID   REASON          SOURCE  DOMAIN  ACTIVITY  ATTEMPTS  STATE
            2026-11-18 11:06:42.120Z  d-1  delivery_limit  broker  ride    r-1       11        pending

            4 matching letter(s), 1 shown (--limit)
              BadDeviceToken: 3
              delivery_limit: 1
            """)
    }

    @Test func listJSONHasTheDocumentedShape() throws {
        let json = try DeadLetterListing.json([Self.letter], counts: ["delivery_limit": 1])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["letters", "counts", "total"])
        let letter = try #require((object["letters"] as? [[String: Any]])?.first)
        #expect(Set(letter.keys) == [
            "id", "reason", "source", "message", "kind", "state", "firstFailedAt", "lastFailedAt", "keptAt", "domain",
            "activityId", "eventId", "attempts", "deaths",
        ])
        #expect(letter["lastFailedAt"] as? String == "2026-11-18T11:06:42.120Z")
        #expect((letter["deaths"] as? [[String: Any]])?.first?["reason"] as? String == "delivery_limit")
    }

    @Test func showNamesEveryFieldAndTheActivityWithTokenPrefixesOnly() throws {
        let activity = ActivityRecord(
            id: "r-1", domain: "ride", attributesType: "RideAttributes", userID: "u-1", lastEventAt: Self.t0,
            startedAt: Self.t0, endedAt: Self.t0.addingTimeInterval(60), endReason: "completed", lastEventID: "e-9")
        let devices = [UpdateToken(activityID: "r-1", deviceID: "phone", token: Self.token, registeredAt: Self.t0)]
        let text = DeadLetterDetail.text(Self.letter, activity: activity, devices: devices)
        #expect(text == """
            dead letter d-1
              reason        delivery_limit (from the broker)
              message       the broker dead-lettered it
              domain        ride
              activity      r-1
              event         e-1
              job           -
              kind          event
              attempts      11
              first failed  2026-11-18 11:06:40.120Z
              last failed   2026-11-18 11:06:42.120Z
              kept          2026-11-18 11:06:43.120Z
              state         pending
              x-death       
                delivery_limit in liveline.translate ×1 at 2026-11-18 11:06:42.120Z (exchange liveline.events, keys ride.status)
              original event:
                {
                  "id" : "e-1",
                  "type" : "ride.status"
                }

            activity r-1 now
              status        ended (ended 2026-11-18 11:07:40.120Z, completed)
              domain        ride
              user          u-1
              last event    2026-11-18 11:06:40.120Z (e-9)
              devices       
                phone  abababab…  registered 2026-11-18 11:06:40.120Z
            """)
        let json = try DeadLetterDetail.json(Self.letter, activity: activity, devices: devices)
        #expect(!json.contains(Self.token) && json.contains("abababab…"))
    }

    @Test func traceIsATimelineWithAbsoluteAndRelativeTimes() throws {
        let lines = [
            TraceLine(sequence: 1, entry: .init(activityID: "r-1", at: Self.t0, kind: .pushDecided, detail: "event e-1: update")),
            TraceLine(sequence: 2, entry: .init(activityID: "r-1", at: Self.t0.addingTimeInterval(61.5), kind: .retried, detail: "tier 5s")),
        ]
        #expect(TraceTimeline.header(activityID: "r-1", tail: TraceTail(lines: lines, matching: 2))
            == "trace of r-1: 2 line(s), 2026-11-18 11:06:40.120Z to 2026-11-18 11:07:41.620Z")
        #expect(lines.map { TraceTimeline.text($0, start: Self.t0) } == [
            "2026-11-18 11:06:40.120Z  +0.000s     decided      event e-1: update",
            "2026-11-18 11:07:41.620Z  +1m01.500s  retry        tier 5s",
        ])
        #expect(try TraceTimeline.json(lines[1])
            == #"{"activityId":"r-1","at":"2026-11-18T11:07:41.620Z","detail":"tier 5s","kind":"retried","sequence":2}"#)
    }

    /// A long trace is cut to its newest lines, and the header and the JSON summary say how
    /// many older ones were left out.
    @Test func traceHeaderSaysHowManyLinesItLeftOut() throws {
        let lines = [
            TraceLine(sequence: 99_999, entry: .init(activityID: "g-1", at: Self.t0, kind: .apnsOutcome, detail: "a")),
            TraceLine(sequence: 100_000, entry: .init(activityID: "g-1", at: Self.t0.addingTimeInterval(1), kind: .apnsOutcome, detail: "b")),
        ]
        let tail = TraceTail(lines: lines, matching: 100_000)
        #expect(TraceTimeline.header(activityID: "g-1", tail: tail, filters: "kind apns-outcome")
            == "trace of g-1 (kind apns-outcome): the newest 2 of 100,000 line(s), 2026-11-18 11:06:40.120Z to "
            + "2026-11-18 11:06:41.120Z; 99,998 older line(s) left out (--tail N shows more)")
        #expect(try TraceTimeline.jsonSummary(activityID: "g-1", tail: tail)
            == #"{"summary":{"activityId":"g-1","leftOut":99998,"matching":100000,"shown":2}}"#)
        #expect(TraceTimeline.header(activityID: "g-1", tail: TraceTail(lines: [], matching: 0))
            == "no trace for activity g-1 (unknown, or older than the trace retention)")
        #expect(TraceTimeline.header(activityID: "g-1", tail: TraceTail(lines: [], matching: 0), filters: "device 80a1b2c3")
            == "no line of the trace of g-1 matches device 80a1b2c3")
    }

    @Test func replaySummaryAndProgress() {
        var summary = DeadLetterReplay.Summary()
        summary.replayed = 12
        summary.skipped = ["superseded": 1, "ended": 2]
        #expect(ReplayProgress.summaryText(summary) == "replayed 12, skipped 3 (ended 2, superseded 1), failed 0")
        #expect(ReplayProgress.bar(done: 5_000, total: 10_000, elapsed: .seconds(2))
            == "[###############---------------]  5,000/10,000  2,500/s  ETA 2s")
    }

    @Test func timesAreRFC3339OrAgesWithClearErrors() throws {
        let now = Self.t0
        #expect(try OnCallTime.parse("2h", option: "--since", now: now) == now.addingTimeInterval(-7200))
        #expect(try OnCallTime.parse("2026-11-18T11:06:40.120Z", option: "--since", now: now) == Self.t0)
        #expect(throws: OnCallTimeError.self) { try OnCallTime.parse("yesterday", option: "--since", now: now) }
        #expect(throws: OnCallTimeError.self) { try OnCallTime.parse("2026-11-18T09:46:40Z", option: "--older-than", now: now, agesOnly: true) }
    }
}
