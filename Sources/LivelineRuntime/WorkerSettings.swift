import Configuration
import Foundation
import LivelineCore

/// Settings of the translator and sender, read under `liveline.` like ``LivelineSettings``.
public struct WorkerSettings: Sendable {
    /// The domains and their policies: the JSON file at `liveline.translator.domains-file`
    /// (a `TranslatorConfiguration`), or the standard ride, delivery and score domains for
    /// `liveline.translator.bundle-id` (default `com.example.liveline`).
    public var translator: TranslatorConfiguration
    /// `liveline.trace.retention-days`, default 7: how long each activity's trace is kept.
    /// Every translator and sender prunes older lines hourly.
    public var traceRetentionDays: Int
    /// `liveline.keeper.enabled`, default true: the sender also runs the dead-letter keeper,
    /// which moves `liveline.dead` into the store for `liveline dlq`.
    public var keeperEnabled: Bool

    public init(config: ConfigReader) throws {
        if let path = config.string(forKey: "translator.domains-file") {
            let data = Data(try LivelineSettings.read(path, for: "translator.domains-file").utf8)
            do {
                translator = try JSONDecoder().decode(TranslatorConfiguration.self, from: data)
            } catch {
                throw SettingsError("liveline.translator.domains-file \(path): \(error)")
            }
        } else {
            translator = .standard(bundleId: config.string(forKey: "translator.bundle-id", default: "com.example.liveline"))
        }

        traceRetentionDays = config.int(forKey: "trace.retention-days", default: 7)
        guard traceRetentionDays >= 1 else {
            throw SettingsError("liveline.trace.retention-days must be at least 1 (days)")
        }
        keeperEnabled = config.bool(forKey: "keeper.enabled", default: true)
    }

    /// How long trace lines are kept.
    public var traceRetention: Duration { .seconds(traceRetentionDays * 86_400) }
}
