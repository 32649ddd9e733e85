import Foundation
import LivelineCodecs
import LivelineCore
import Testing

/// Job identity, fields and JSON encoding.
@Suite("Push jobs")
struct PushJobTests {
    @Test func idsAreStableAcrossRedelivery() throws {
        var first = ActivityRun()
        var second = ActivityRun()
        let a = try Fixtures.sent(try first.apply("ride-arrived"))
        // Same event translated again later (redelivery to another worker).
        let b = try Fixtures.sent(try second.apply("ride-arrived", now: Fixtures.base.addingTimeInterval(400)))
        #expect(a.jobs.map(\.jobId) == b.jobs.map(\.jobId))
        #expect(a.jobs.map(\.apnsId) == b.jobs.map(\.apnsId))
        #expect(a.jobs.map(\.payload) == b.jobs.map(\.payload))
        #expect(Set(a.jobs.map(\.apnsId)).count == a.jobs.count)
    }

    @Test func jobIdDependsOnEventAndTarget() {
        let target = PushTarget.device(token: Fixtures.tokenA, kind: .update)
        let id = JobIdentity.jobId(eventId: "e-1", target: target)
        #expect(id.count == 40)
        #expect(id == JobIdentity.jobId(eventId: "e-1", target: .device(token: Fixtures.tokenA.uppercased(), kind: .update)))
        #expect(id != JobIdentity.jobId(eventId: "e-2", target: target))
        #expect(id != JobIdentity.jobId(eventId: "e-1", target: .device(token: Fixtures.tokenA, kind: .pushToStart)))
        #expect(!id.contains(Fixtures.tokenA.prefix(16)))
    }

    @Test func apnsIdIsAVersion5UUID() throws {
        // RFC 4122 test vector as produced by Python's uuid.uuid5(NAMESPACE_DNS, "python.org").
        let dns = try #require(UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"))
        #expect(JobIdentity.nameBasedUUID(namespace: dns, name: "python.org").uuidString.lowercased()
            == "886313e1-3b8a-5372-9b90-0c9aee199e5d")
        let apnsId = JobIdentity.apnsId(jobId: "abc").uuidString.lowercased()
        #expect(Array(apnsId)[14] == "5")
    }

    @Test func jobFieldsForAnAlertingUpdate() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        let send = try Fixtures.sent(try run.apply("ride-arrived"))
        let job = try #require(send.jobs.first)
        #expect(job.activityId == "r-123")
        #expect(job.domain == "ride")
        #expect(job.eventId == "ride-evt-003")
        #expect(job.userId == "u-9")
        #expect(job.attributesType == "RideAttributes")
        #expect(job.bundleId == Fixtures.bundleId)
        #expect(job.apnsTopic == "com.example.liveline.push-type.liveactivity")
        #expect(job.priority == .high)
        #expect(job.expiration == 1_795_255_800)
        #expect(job.event == .update)
        #expect(!job.isTerminal)
        #expect(job.sequence == 1_795_255_500_120)
        #expect(job.eventTime.description == "2026-11-21T10:05:00.120Z")
    }

    @Test func prioritiesFollowThePolicy() throws {
        var run = ActivityRun()
        let priorities = try ["ride-assigned", "ride-eta-tick", "ride-arrived", "ride-completed"].map { name in
            try Fixtures.sent(try run.apply(name)).jobs[0].priority
        }
        #expect(priorities == [.low, .low, .high, .high])

        var score = ActivityRun()
        let scorePriorities = try ["score-scheduled", "score-kickoff", "score-clock", "score-goal", "score-final"].map { name in
            try Fixtures.sent(try score.apply(name)).jobs[0].priority
        }
        #expect(scorePriorities == [.low, .high, .low, .high, .high])
    }

    @Test func endsHaveNoExpiration() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        let end = try Fixtures.sent(try run.apply("ride-completed"))
        #expect(end.jobs.allSatisfy { $0.expiration == nil && $0.isTerminal && $0.event == .end })
    }

    @Test func jsonEncodingIsDocumentedAndRoundTrips() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let job = try #require(try Fixtures.sent(try run.apply("ride-arrived")).jobs.first)
        let data = job.encoded()
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == [
            "jobId", "apnsId", "activityId", "domain", "eventId", "eventTime", "userId", "attributesType", "target",
            "bundleId", "apnsTopic", "priority", "expiration", "event", "payload", "isTerminal", "sequence", "alerts",
        ])
        #expect(object["alerts"] as? Bool == true, "the driver's arrival carries an alert")
        #expect(object["eventTime"] as? String == "2026-11-21T10:05:00.120Z")
        #expect(object["priority"] as? Int == 10)
        #expect(object["event"] as? String == "update")
        #expect(object["payload"] as? String == job.payload.base64EncodedString())
        #expect(object["apnsId"] as? String == job.apnsId.uuidString.lowercased())
        let target = try #require(object["target"] as? [String: Any])
        #expect((target["device"] as? [String: Any])?["kind"] as? String == "update")
        #expect((target["device"] as? [String: Any])?["environment"] == nil, "production is the default, not written")
        #expect(try PushJob(json: data) == job)
        // A job without an alert leaves the member out, and reads back as without one.
        let tick = try #require(try Fixtures.sent(try run.apply("ride-completed")).jobs.first)
        #expect(!tick.alerts || tick.encoded().range(of: Data(#""alerts""#.utf8)) != nil)
        var silent = job
        silent.alerts = false
        #expect(silent.encoded().range(of: Data(#""alerts""#.utf8)) == nil)
        #expect(try PushJob(json: silent.encoded()).alerts == false)

        var sandboxed = job
        sandboxed.target = .device(token: Fixtures.tokenA, kind: .update, environment: .sandbox)
        let sandboxedObject = try #require(try JSONSerialization.jsonObject(with: sandboxed.encoded()) as? [String: Any])
        #expect(((sandboxedObject["target"] as? [String: Any])?["device"] as? [String: Any])?["environment"] as? String == "sandbox")
        #expect(try PushJob(json: sandboxed.encoded()) == sandboxed)
        #expect(sandboxed.jobId == job.jobId, "a token lives in one environment; it is not part of the job's identity")

        var broadcast = job
        broadcast.target = .channel(key: "game-1")
        broadcast.expiration = nil
        let broadcastData = broadcast.encoded()
        let broadcastObject = try #require(try JSONSerialization.jsonObject(with: broadcastData) as? [String: Any])
        #expect(((broadcastObject["target"] as? [String: Any])?["channel"] as? [String: Any])?["key"] as? String == "game-1")
        #expect(broadcastObject["expiration"] == nil)
        #expect(try PushJob(json: broadcastData) == broadcast)
    }

    /// The reader matches keys as bytes when it can; a key written with escapes, or spelled in
    /// non-ASCII, is the same key (or an unknown one) all the same.
    @Test func keysWrittenWithEscapesAreTheSameKeys() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let job = try #require(try Fixtures.sent(try run.apply("ride-arrived")).jobs.first)
        let plain = String(decoding: job.encoded(), as: UTF8.self)
        let escaped = plain
            .replacingOccurrences(of: #""jobId":"#, with: #""job\u0049d":"#)
            .replacingOccurrences(of: #""token":"#, with: #""t\u006Fken":"#)
            .replacingOccurrences(of: #""device":"#, with: #""devic\u0065":"#)
            .replacingOccurrences(of: #"{"jobId"#, with: #"{"jöbId":"ignored","jobId"#)
        #expect(escaped != plain)
        #expect(try PushJob(json: Data(escaped.utf8)) == job)
        let renamed = plain.replacingOccurrences(of: #""sequence":"#, with: #""sequenc\u00e9":"#)
        #expect(throws: PushJob.FormatError.self) { try PushJob(json: Data(renamed.utf8)) }
    }

    /// A bundle is one job per line, even when a job's strings hold newlines (they are escaped).
    @Test func aBundleIsOneJobPerLineAndRoundTrips() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let job = try #require(try Fixtures.sent(try run.apply("ride-arrived")).jobs.first)
        var odd = job
        odd.eventId = "line one\nline two\r\n"
        odd.target = .device(token: Fixtures.tokenB, kind: .update)
        let body = PushJobBundle.encode([job, odd, job])
        let lines = PushJobBundle.lines(of: body)
        #expect(lines.count == 3)
        #expect(try lines.map { try PushJob(json: $0) } == [job, odd, job])
        #expect(body.last == UInt8(ascii: "\n"))
        #expect(PushJobBundle.lines(of: Data("\n \n\r\n".utf8)).isEmpty, "blank lines are no jobs")
    }

    @Test func jobJSONWithAWrongFieldNamesTheField() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let job = try #require(try Fixtures.sent(try run.apply("ride-arrived")).jobs.first)
        var object = try #require(try JSONSerialization.jsonObject(with: job.encoded()) as? [String: Any])
        func reason(_ edit: (inout [String: Any]) -> Void) throws -> String {
            var copy = object
            edit(&copy)
            let data = try JSONSerialization.data(withJSONObject: copy)
            do {
                _ = try PushJob(json: data)
                return "decoded"
            } catch {
                return error.description
            }
        }
        #expect(try reason { $0["apnsId"] = "6ba7b810-9dad-11d1-80b4-00c04fd430c" } == "apnsId is not a UUID")
        #expect(try reason { $0["priority"] = 7 } == "priority is not 5 or 10")
        #expect(try reason { $0["payload"] = "not base64!" } == "payload is not base64")
        #expect(try reason { $0["eventTime"] = 12 } == "eventTime is not a string")
        #expect(try reason { $0.removeValue(forKey: "jobId") } == "missing jobId")
        #expect(try reason { $0["target"] = ["device": ["token": "ab", "kind": "other"]] } == "target.device.kind is not update or pushToStart")
        #expect(try reason { $0["target"] = ["device": ["token": "ab", "kind": "update", "environment": "staging"]] }
            == "target.device.environment is not production or sandbox")
        #expect(try reason { $0["target"] = [String: Any]() } == "target has neither device nor channel")
        #expect(try reason { $0["target"] = ["device": ["kind": "update"]] } == "missing target.device.token")
        #expect(try reason { $0["target"] = ["channel": ["token": "ab"]] } == "missing target.channel.key")
        #expect(try reason { $0["target"] = ["pigeon": ["key": "k"]] } == "target has neither device nor channel")
        #expect(try reason { $0["target"] = ["channel": ["key": "game-1", "note": 1]] } == "decoded")
        object["event"] = "pause"
        #expect(throws: PushJob.FormatError.self) { try PushJob(json: try JSONSerialization.data(withJSONObject: object)) }
        #expect(throws: PushJob.FormatError.self) { try PushJob(json: Data("[1]".utf8)) }
    }

    @Test func supersedeOnlyReplacesOlderUpdates() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let assigned = try #require(try Fixtures.sent(try run.apply("ride-assigned")).jobs.first)
        let tick = try #require(try Fixtures.sent(try run.apply("ride-eta-tick")).jobs.first)
        let end = try #require(try Fixtures.sent(try run.apply("ride-completed")).jobs.first)
        #expect(tick.supersedes(assigned))
        #expect(!assigned.supersedes(tick))
        #expect(end.supersedes(tick))
        #expect(!tick.supersedes(end))
    }

    @Test func hyphenatedUUIDParsingMatchesFoundation() {
        for _ in 0..<200 {
            let uuid = UUID()
            #expect(UUID(hyphenated: uuid.uuidString) == uuid)
            #expect(UUID(hyphenated: uuid.uuidString.lowercased()) == uuid)
        }
        let valid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
        for text in [
            "", valid.replacingOccurrences(of: "-", with: ""), String(valid.dropLast()), valid + "0",
            valid.replacingOccurrences(of: "b810-", with: "b8100"), valid.replacingOccurrences(of: "c8", with: "cg"),
            "6ba7b810-9dad-11d1-80b4-00c04fd430c\u{e9}",
        ] {
            #expect(UUID(hyphenated: text) == nil, "\(text)")
            #expect(UUID(uuidString: text) == nil, "Foundation agrees about \(text)")
        }
    }

    /// One lane per activity and target: stable, apart for tokens that share a long prefix,
    /// and without the token itself.
    @Test func laneKeysNameTheActivityAndTheTarget() {
        let a = String(repeating: "ab", count: 31) + "01", b = String(repeating: "ab", count: 31) + "02"
        let laneA = PushTarget.device(token: a, kind: .update).laneKey(activity: "g-1")
        #expect(laneA == PushTarget.device(token: a.uppercased(), kind: .update, environment: .sandbox).laneKey(activity: "g-1"))
        #expect(laneA != PushTarget.device(token: b, kind: .update).laneKey(activity: "g-1"))
        #expect(laneA != PushTarget.device(token: a, kind: .pushToStart).laneKey(activity: "g-1"))
        #expect(laneA != PushTarget.device(token: a, kind: .update).laneKey(activity: "g-2"))
        #expect(!laneA.contains(a.prefix(16)))
        #expect(PushTarget.channel(key: "g-1").laneKey(activity: "g-1") == "g-1\nchannel")
        // The hash itself is pinned (FNV-1a of the lowercased token): translators of two
        // versions running side by side must put one target's jobs in one lane.
        #expect(laneA == "g-1\nupdate:555991e1f464c249")
        let unusual = "ÄB" + String(repeating: "ab", count: 30)
        #expect(PushTarget.device(token: unusual, kind: .update).laneKey(activity: "g-1") == "g-1\nupdate:65df57b6e7921a74")
    }
}
