import Foundation
import LivelineRuntime
import Logging
import Synchronization
import Testing

@Suite struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
    }

    @Test func eachEntryIsOneJSONObjectWithItsMetadata() throws {
        let sink = Lines()
        var logger = Logger(label: "liveline.sender") { label in
            JSONLogHandler(label: label) { line in sink.lines.withLock { $0.append(line) } }
        }
        logger[metadataKey: "amqp.queue"] = "liveline.send"
        logger.error("apns connection failed", metadata: ["apns.host": "api.push.apple.com", "apns.failures": "3"])
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(!lines[0].contains("\n"), "one line per entry")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "error")
        #expect(object["logger"] as? String == "liveline.sender")
        #expect(object["msg"] as? String == "apns connection failed")
        #expect(object["amqp.queue"] as? String == "liveline.send")
        #expect(object["apns.host"] as? String == "api.push.apple.com")
        let time = try #require(object["ts"] as? String)
        #expect(ISO8601DateFormatter().date(from: time.replacingOccurrences(of: #"\.\d+"#, with: "", options: .regularExpression)) != nil)
    }
}
