import Foundation
@testable import LivelineRuntime
import Testing

/// The declarations the settings are read through, and the reference written from them.
@Suite struct SettingTests {
    @Test func eachKeyIsDeclaredOnceWithWhatTheReferenceNeeds() {
        let keys = Setting.all.map(\.key)
        #expect(Set(keys).count == keys.count, "a key declared twice")
        for setting in Setting.all {
            #expect(!setting.meaning.isEmpty && !setting.readBy.isEmpty, "\(setting.name)")
            #expect(setting.environmentVariable.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" || $0 == "<" || $0 == ">" })
        }
        #expect(Setting.opsPort.environmentVariable == "LIVELINE_OPS_PORT")
        #expect(Setting.appKey.environmentVariable == "LIVELINE_APP_<NAME>_KEY")
        #expect(Setting.appKey.name(app: "rides") == "liveline.app.rides.key")
    }

    @Test func theReferenceHasARowForEverySettingWithItsDefault() {
        let page = SettingReference.markdown()
        for setting in Setting.all {
            let rows = page.split(separator: "\n").filter { $0.hasPrefix("| `\(setting.name)` | `\(setting.environmentVariable)` |") }
            #expect(rows.count == 1, "\(setting.name)")
        }
        // Defaults come from the values the code uses, not from a second copy.
        #expect(page.contains("| `liveline.translator.max-batch` | `LIVELINE_TRANSLATOR_MAX_BATCH` | integer, 1 to 1000 | `250` |"))
        #expect(page.contains("| `liveline.retry.delays-seconds` | `LIVELINE_RETRY_DELAYS_SECONDS` |"))
        #expect(page.contains("| `5,30,120,600` |"))
        #expect(page.contains("| `liveline.amqp.url` | `LIVELINE_AMQP_URL` | URL, `amqp://` or `amqps://` | `amqp://guest:guest@127.0.0.1:5672/%2f` | yes |"))
    }

    @Test func aRoleSeesTheSettingsItReads() throws {
        let senderSettings = SettingReference.settings(readBy: "sender")
        let sender = Set(senderSettings.map(\.key))
        #expect(sender.contains("sender.trace-flush-ms") && sender.contains("app.<name>.key") && sender.contains("amqp.url"))
        #expect(!sender.contains("api.port") && !sender.contains("translator.max-batch"))
        let api = Set(SettingReference.settings(readBy: "api").map(\.key))
        #expect(api.contains("api.port") && !api.contains("sender.trace-flush-ms"))
        #expect(SettingReference.settings(readBy: "nobody").isEmpty)

        let entries = try #require(try JSONSerialization.jsonObject(with: SettingReference.json(senderSettings)) as? [[String: Any]])
        #expect(entries.count == sender.count)
        let amqp = try #require(entries.first { $0["key"] as? String == "liveline.amqp.url" })
        #expect(amqp["secret"] as? Bool == true && amqp["environmentVariable"] as? String == "LIVELINE_AMQP_URL")
        #expect((amqp["meaning"] as? String)?.contains("`") == false, "plain text for tools, not Markdown")
    }

    @Test func linksAndCodeBecomePlainText() {
        #expect(SettingReference.plain("see [the AMQP layer](../architecture.md#x) and `liveline.apps`") == "see the AMQP layer and liveline.apps")
        let wrapped = SettingReference.wrapped(String(repeating: "word ", count: 60))
        #expect(wrapped.split(separator: "\n").allSatisfy { $0.count <= 100 && $0.hasPrefix("  ") })
    }

    @Test func anIntegerOutOfRangeOrNotANumberIsRefusedNamingTheKeyAndRange() async throws {
        for (variable, value, message) in [
            ("LIVELINE_API_EVENTS_MAX_BATCH_EVENTS", "0", "liveline.api.events.max-batch-events must be 1 to 10000, not 0"),
            ("LIVELINE_OPS_STALL_AFTER_SECONDS", "0", "liveline.ops.stall-after-seconds must be at least 1, not 0"),
            ("LIVELINE_OPS_PORT", "65536", "liveline.ops.port must be a port number (0 to 65535), not 65536"),
            ("LIVELINE_STORE_SQLITE_CACHE_MIB", "lots", "liveline.store.sqlite-cache-mib must be a whole number, not \"lots\""),
        ] {
            let error = await #expect(throws: SettingsError.self) {
                _ = try await LivelineSettings.load(file: nil, environment: [variable: value])
            }
            #expect(error?.description == message)
        }
    }
}
