import LivelineAMQP
import LivelineAPI
import LivelineAPNs
import LivelineLogging
import LivelineRuntime
import LivelineServices
import LivelineStore
import Logging
import Testing

/// Log metadata keys: one typed set per module, in dot notation under the module's own
/// prefixes, and no key shared by two modules, so a log pipeline can tell them apart.
@Suite struct LogKeyTests {
    /// Each module's keys and the prefixes they may use.
    static let modules: [(name: String, keys: [String], prefixes: [String])] = [
        ("LivelineAMQP", AMQPLogKey.allCases.map(\.rawValue), ["amqp."]),
        ("LivelineAPNs", APNsLogKey.allCases.map(\.rawValue), ["apns."]),
        ("LivelineStore", StoreLogKey.allCases.map(\.rawValue), ["store."]),
        ("LivelineAPI", APILogKey.allCases.map(\.rawValue), ["api."]),
        ("LivelineServices", ServiceLogKey.allCases.map(\.rawValue), ["translator.", "sender.", "push.", "channel.", "dlq.", "trace.", "shard.", "prune."]),
        ("LivelineRuntime", RuntimeLogKey.allCases.map(\.rawValue), ["liveline.", "simulator."]),
    ]

    @Test(arguments: modules.map(\.name))
    func everyKeyIsDottedUnderItsModulesPrefix(module: String) throws {
        let entry = try #require(Self.modules.first { $0.name == module })
        #expect(!entry.keys.isEmpty)
        for key in entry.keys {
            #expect(key.wholeMatch(of: /[a-z0-9_]+(\.[a-z0-9_]+)+/) != nil, "\(key) is not in dot notation")
            #expect(entry.prefixes.contains { key.hasPrefix($0) }, "\(key) is not under \(entry.prefixes)")
        }
    }

    @Test func noKeyIsUsedByTwoModules() {
        let all = Self.modules.flatMap(\.keys)
        let repeated = Dictionary(grouping: all, by: { $0 }).filter { $0.value.count > 1 }.keys
        #expect(repeated.isEmpty, "\(repeated.sorted())")
    }

    @Test func metadataAndLoggerSubscriptUseTheRawKeys() {
        let metadata = AMQPLogKey.metadata([.attempt: "2", .error: "refused"])
        #expect(metadata == ["amqp.attempt": "2", "amqp.error": "refused"])
        var logger = Logger(label: "test")
        logger[AMQPLogKey.broker] = "127.0.0.1:5672"
        #expect(logger[metadataKey: "amqp.broker"] == "127.0.0.1:5672")
    }
}
