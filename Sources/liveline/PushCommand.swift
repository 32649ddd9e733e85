import ArgumentParser
import Foundation
import LivelineAPNs
import LivelineCore
import LivelineModels
import LivelineRuntime

// Tests: scripts/check-docs

/// `liveline push`: one push to one device, for an app developer trying their widget.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send one Live Activity push to one device, straight to APNs, and print APNs' answer.",
        discussion: """
            For trying a widget without writing a producer. The content-state is checked against the model of the \
            domain whose activities are --attributes-type, as a producer's event is, and the push is signed with the \
            sender's APNs settings (liveline.apps, liveline.app.<name>.*, liveline.apns.*). It is sent once, not \
            retried; nothing is stored or queued. Exits 1 unless APNs answered 200.

            Examples:
              liveline push --token "$TOKEN" --attributes-type RideAttributes --state state.json
              liveline push --token "$TOKEN" --app com.example.rides --attributes-type RideAttributes \\
                --state '{"driverName":"Maria", …, "status":"driverArrived"}' --alert "Maria is here" \\
                --alert-body "White Toyota Camry" --sandbox
              liveline push --token "$TOKEN" --attributes-type RideAttributes --state state.json --end
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "The activity's push token (or a push-to-start token's device), as hex.") var token: String
    @Option(help: "The bundle id whose APNs credentials sign the push (default: the domain's).") var app: String?
    @Option(help: "The activity's attributes type, e.g. RideAttributes: it picks the domain.") var attributesType: String
    @Option(help: "The content-state: a JSON file, or the JSON itself.") var state: String
    @Flag(help: "Send an end (dismissed at once) instead of an update.") var end = false
    @Option(help: "An alert's title; --alert-body gives its body.") var alert: String?
    @Option(help: "The alert's body.") var alertBody: String?
    @Option(help: "apns-priority: 5 or 10.") var priority = 10
    @Flag(help: "The token is a development build's: send to the sandbox.") var sandbox = false
    @Flag(help: "JSON for tools: APNs' answer and what was sent.") var json = false

    func validate() throws {
        guard APNsPriority(rawValue: priority) != nil else { throw ValidationError("--priority must be 5 or 10, not \(priority)") }
        if (alert == nil) != (alertBody == nil) {
            throw ValidationError("an alert needs both --alert (its title) and --alert-body")
        }
    }

    func run() async throws {
        let logger = onCallLogger(options)
        let config = try await LivelineSettings.reader(file: options.config)
        let workers = try WorkerSettings(config: config)
        let clients = try APNsSettings(config: config).clients(logger: logger)
        var request = TestPushSender.Request(
            token: token, bundleID: app, attributesType: attributesType, contentState: try Self.read(state))
        request.end = end
        request.alert = alert.flatMap { title in alertBody.map { (title, $0) } }
        request.environment = sandbox ? .sandbox : .production
        request.priority = APNsPriority(rawValue: priority) ?? .high
        let result: Result<TestPushSender.Answer, any Error>
        do {
            result = .success(try await TestPushSender(translator: Translator(configuration: workers.translator), clients: clients).send(request))
        } catch {
            result = .failure(error)
        }
        await clients.shutdown()
        let answer: TestPushSender.Answer
        do {
            answer = try result.get()
        } catch let error as TestPushError {
            throw OnCallError(error.description)
        }
        print(json ? String(decoding: try JSONEncoder.sorted.encode(answer), as: UTF8.self) : answer.text)
        if !answer.delivered { throw ExitCode.failure }
    }

    /// `--state`: JSON given inline (it starts with `{`), or a file's.
    static func read(_ state: String) throws -> Data {
        if state.trimmingCharacters(in: .whitespaces).hasPrefix("{") { return Data(state.utf8) }
        do { return try Data(contentsOf: URL(fileURLWithPath: state)) } catch {
            throw OnCallError("--state: cannot read \(state) (give a JSON file, or the JSON itself)")
        }
    }
}
