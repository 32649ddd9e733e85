import APNsSimulator
import Foundation
import LivelineLogging
import Logging
import ServiceLifecycle

// Tests: scripts/bench-smoke, scripts/faults

/// Runs the APNs simulator as a service: it serves until graceful shutdown.
public struct SimulatorService: Service {
    public let simulator: APNsSimulator
    let certificateFile: String?
    let logger: Logger

    /// - Parameter certificateFile: where to write the simulator's self-signed certificate so
    ///   senders can trust it (`liveline.apns.ca-file`).
    public init(simulator: APNsSimulator, certificateFile: String?, logger: Logger) {
        self.simulator = simulator
        self.certificateFile = certificateFile
        self.logger = logger
    }

    public func run() async throws {
        let port = try await simulator.start()
        if let certificateFile, simulator.configuration.useTLS {
            try simulator.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        }
        logger.info(
            "APNs simulator listening",
            metadata: RuntimeLogKey.metadata([
                .simulatorAddress: "\(simulator.configuration.host):\(port)",
                .simulatorTLS: "\(simulator.configuration.useTLS)",
                .simulatorCertificate: "\(certificateFile ?? "-")",
            ]))
        try? await gracefulShutdown()
        try await simulator.stop()
    }
}
