import Foundation

/// Command-line options of `sender-bench`.
///
///   swift run -c release sender-bench [--count N] [--in-flight C] [--prefetch P]
///                                     [--connections K] [--mode full|apns|amqp]
///
/// Modes: `full` measures broker → sender → simulator with acks; `apns` measures the
/// APNs client against the simulator alone; `amqp` measures consume-and-ack alone. The
/// last two show where a full run's time goes.
struct BenchOptions {
    enum Mode: String {
        case full, apns, amqp
    }

    var count = 100_000
    var inFlight = 1_000
    var prefetch: UInt16 = 2_000
    var connections = 2
    var mode = Mode.full
    var amqpURL = ProcessInfo.processInfo.environment["LIVELINE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--count": count = Int(value) ?? count
            case "--in-flight": inFlight = Int(value) ?? inFlight
            case "--prefetch": prefetch = UInt16(value) ?? prefetch
            case "--connections": connections = Int(value) ?? connections
            case "--mode": mode = Mode(rawValue: value) ?? mode
            case "--amqp": amqpURL = value
            default:
                print("unknown option \(argument)")
                exit(2)
            }
        }
    }
}
