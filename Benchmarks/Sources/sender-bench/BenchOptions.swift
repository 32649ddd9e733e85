import ArgumentParser
import Foundation
import LivelineAPNs
import LivelineServices

// Tests: scripts/bench-smoke

/// Command-line options of `sender-bench`.
///
///   swift run -c release sender-bench [--count N] [--in-flight C] [--prefetch P]
///                                     [--connections K] [--mode full|apns|amqp] [--amqp URL]
///
/// Modes: `full` measures broker → sender → simulator with acks; `apns` measures the
/// APNs client against the simulator alone; `amqp` measures consume-and-ack alone. The
/// last two show where a full run's time goes.
struct BenchOptions: ParsableCommand {
    // A command only for its name in usage and errors; SenderBench.main does the work.
    static let configuration = CommandConfiguration(commandName: "sender-bench")

    enum Mode: String, ExpressibleByArgument {
        case full, apns, amqp
    }

    @Option(help: "Push jobs to send.") var count = 100_000
    @Option(help: "Sends in flight at once (default: one per stream the APNs connections can open, 100 each, as the sender's default of 400 is for its 4).")
    var inFlight: Int?
    @Option(help: "Consumer prefetch on the send queue.") var prefetch: UInt16 = SenderSettings().prefetch
    @Option(help: "APNs connections.") var connections = 2
    @Option(help: "full, apns or amqp.") var mode = Mode.full
    @Flag(help: "Also send every metric to a Prometheus registry, as `liveline sender` does (off: only the two the benchmark reads).")
    var prometheus = false
    @Option(name: .customLong("amqp"), help: "AMQP URL.")
    var amqpURL = ProcessInfo.processInfo.environment["LIVELINE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"

    var sendsInFlight: Int { inFlight ?? connections * APNsConnectionPoolConfiguration().maximumStreamsPerConnection }
}
