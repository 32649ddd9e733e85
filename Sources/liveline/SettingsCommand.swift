import ArgumentParser
import Foundation
import LivelineRuntime

// Tests: scripts/references, scripts/check-docs

/// `liveline settings`: the configuration reference, from the settings' declarations.
struct SettingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Print every setting: key, environment variable, type, default, who reads it, and what it does."
    )

    @Option(name: .customLong("read-by"), help: "Only the settings a role or command reads: translator, sender, api, publish, …")
    var reader: String?

    @Flag(help: "One JSON object per setting, for tools.")
    var json = false

    @Flag(help: "The reference page as Markdown (docs/reference/configuration.md).")
    var markdown = false

    func validate() throws {
        if json && markdown { throw ValidationError("give --json or --markdown, not both") }
        if markdown && reader != nil { throw ValidationError("--markdown writes the whole reference; leave out --read-by") }
        if let reader, SettingReference.settings(readBy: reader).isEmpty {
            throw ValidationError("no setting is read by \(reader); try translator, sender or api")
        }
    }

    func run() throws {
        let settings = SettingReference.settings(readBy: reader)
        if markdown {
            print(SettingReference.markdown(), terminator: "")
        } else if json {
            FileHandle.standardOutput.write(try SettingReference.json(settings))
            print()
        } else {
            print(SettingReference.text(settings), terminator: "")
            print("\(settings.count) settings")
        }
    }
}
