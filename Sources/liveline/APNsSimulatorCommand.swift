import APNsSimulator
import ArgumentParser
import Foundation
import LivelineRuntime

// Tests: scripts/bench-smoke, scripts/faults, scripts/check-docs

/// `liveline apns-sim`: a local stand-in for APNs (HTTP/2 + TLS, APNs statuses and reasons).
struct APNsSimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "Run the APNs simulator: HTTP/2 over TLS with APNs' validation, reasons and fault injection.",
        discussion: """
            Point a sender at it with LIVELINE_APNS_ENDPOINT=<host>:<port> and trust the certificate \
            written to --certificate-out (LIVELINE_APNS_CA_FILE). What each simulated device received: GET /_sim/devices/<token>; \
            every device push in arrival order: GET /_sim/receipts?from=N; counters: GET /_sim/stats.
            """
    )

    @OptionGroup var options: CommonOptions
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (APNs uses 443 and 2197).") var port = 2197
    @Flag(help: "Serve cleartext HTTP/2 (h2c) instead of TLS.") var plaintext = false
    @Option(help: "Write the self-signed certificate (PEM) here for clients to trust.")
    var certificateOut: String = ".liveline/apns-sim.pem"
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS per connection.") var maxStreams = 1000
    @Flag(help: "Start each connection at 1 stream and raise it after the first valid token, like APNs.")
    var startWithOneStream = false
    @Option(
        parsing: .upToNextOption,
        help: "Random faults as status:probability, e.g. 500:0.01 503:0.005 410:0.001 429:0.01.")
    var fault: [String] = []
    @Option(
        parsing: .upToNextOption,
        help: "Check JWT signatures against these keys, as key-id:team-id:public-key.pem (without one, any well-formed token passes).")
    var trustedKey: [String] = []

    func run() async throws {
        let logger = options.logger("liveline.apns-sim")
        let trustedKeys = try trustedKey.map { text in
            let parts = text.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("--trusted-key \(text): expected key-id:team-id:public-key.pem")
            }
            guard let pem = try? String(contentsOfFile: parts[2], encoding: .utf8) else {
                throw ValidationError("--trusted-key \(text): cannot read \(parts[2])")
            }
            return APNsSimulatorConfiguration.TrustedKey(keyID: parts[0], teamID: parts[1], publicKeyPEM: pem)
        }
        let simulator: APNsSimulator
        do {
            simulator = try APNsSimulator(
                configuration: .init(
                    host: host, port: port, useTLS: !plaintext, maximumConcurrentStreams: maxStreams,
                    startWithOneStream: startWithOneStream, trustedKeys: trustedKeys))
        } catch {
            throw ValidationError("--trusted-key: not a P-256 public key in PEM (\(error))")
        }
        var faults: [(fault: APNsSimulatorFault, probability: Double)] = []
        for text in fault {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let status = Int(parts[0]), let probability = Double(parts[1]),
                (0...1).contains(probability), let fault = APNsSimulatorFault(status: status)
            else {
                throw ValidationError("--fault \(text): expected status:probability with status 400, 410, 429, 500 or 503")
            }
            faults.append((fault, probability))
        }
        if !faults.isEmpty { simulator.injectRandomFaults(faults) }
        if !plaintext {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: certificateOut).deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        let service = SimulatorService(simulator: simulator, certificateFile: certificateOut, logger: logger)
        try await runUntilSignalled([service], logger: logger)
    }
}

extension APNsSimulatorFault {
    /// The fault a status code stands for on the command line.
    init?(status: Int) {
        switch status {
        case 400: self = .badDeviceToken
        case 410: self = .unregistered
        case 429: self = .tooManyRequests
        case 500: self = .internalServerError
        case 503: self = .serviceUnavailable
        default: return nil
        }
    }
}
