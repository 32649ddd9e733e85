import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import LivelineBenchSupport
import Histogram
import LivelineAPNs

// Tests: scripts/bench-smoke

/// Pushes N realistic liveactivity payloads through `APNsClient` into an `APNsSimulator` and prints
/// throughput, latency percentiles and peak RSS. A benchmark prints figures; it asserts nothing.
///
///   swift run -c release apns-bench [--count N] [--concurrency C] [--connections K] [--streams S]
///                                   [--host H --port P --ca FILE --team T --key-id K --key FILE]
///   swift run -c release apns-bench --serve SECONDS [--cert-out FILE] [--key FILE]   (simulator only)
struct Options: ParsableCommand {
    // A command only for its name in usage and errors; the script below does the work.
    static let configuration = CommandConfiguration(commandName: "apns-bench")

    @Option(help: "Pushes to send.") var count = 100_000
    @Option(help: "Pushes in flight at once.") var concurrency = 400
    @Option(help: "HTTP/2 connections.") var connections = 4
    @Option(name: .customLong("streams"), help: "Concurrent streams per connection.") var streamsPerConnection = 100
    @Option(help: "APNs host (default: an in-process simulator).") var host: String?
    @Option(help: "APNs port.") var port = 0
    @Option(name: .customLong("ca"), help: "CA file for --host.") var caFile: String?
    @Option(name: .customLong("team"), help: "Team id of the signing key.") var teamID = "BENCHTEAM1"
    @Option(help: "Key id of the signing key.") var keyID = "BENCHKEY01"
    @Option(name: .customLong("key"), help: "PEM file of the P-256 signing key (default: a key made for this run).")
    var keyFile: String?
    @Option(name: .customLong("serve"), help: "Run only the simulator for this many seconds (for a second process or h2load).")
    var serveSeconds: Int?
    @Option(name: .customLong("cert-out"), help: "Where --serve writes the simulator's CA certificate.")
    var certificateOut = "/tmp/apns-sim-ca.pem"
}

let options = Options.parseOrExit()
let key: String
if let keyFile = options.keyFile {
    key = try String(contentsOfFile: keyFile, encoding: .utf8)
} else {
    key = P256.Signing.PrivateKey().pemRepresentation
}

var simulator: APNsSimulator?
let endpoint: APNsEndpoint
if let seconds = options.serveSeconds {
    // Simulator only, so client and simulator can be measured as separate processes.
    let publicKey = try P256.Signing.PrivateKey(pemRepresentation: key).publicKey.pemRepresentation
    let served = try APNsSimulator(
        configuration: .init(
            port: options.port,
            trustedKeys: [.init(keyID: options.keyID, teamID: options.teamID, publicKeyPEM: publicKey)],
            recordDeliveries: false,
            sendUniqueID: false
        )
    )
    let port = try await served.start()
    try served.certificatePEM.write(toFile: options.certificateOut, atomically: true, encoding: .utf8)
    let signer = try APNsTokenSigner(teamID: options.teamID, keyID: options.keyID, privateKeyPEM: key)
    // Unbuffered, so a script can read the port and token while the simulator runs.
    let banner = "simulator on 127.0.0.1:\(port), CA in \(options.certificateOut), for \(seconds) s\n"
        + "authorization: bearer \(signer.currentToken().jwt)\n"
    FileHandle.standardOutput.write(Data(banner.utf8))
    try await Task.sleep(for: .seconds(seconds))
    let statistics = served.statistics
    print("simulator: \(statistics.requests) requests, statuses \(statistics.responsesByStatus), connections \(statistics.connectionsAccepted)")
    print(String(format: "simulator peak RSS (VmHWM): %.1f MiB", ProcessUsage.peakRSSMebibytes()))
    try await served.stop()
    exit(0)
}
if let host = options.host {
    endpoint = APNsEndpoint(host: host, port: options.port, trust: options.caFile.map { .caFile(path: $0) } ?? .systemDefault)
} else {
    let publicKey = try P256.Signing.PrivateKey(pemRepresentation: key).publicKey.pemRepresentation
    let started = try APNsSimulator(
        configuration: .init(
            maximumConcurrentStreams: 1000,
            trustedKeys: [.init(keyID: options.keyID, teamID: options.teamID, publicKeyPEM: publicKey)],
            recordDeliveries: false,
            sendUniqueID: false
        )
    )
    let port = try await started.start()
    simulator = started
    endpoint = APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(started.certificatePEM))
}

let client = try APNsClient(
    configuration: .init(
        bundleID: "com.example.rides",
        teamID: options.teamID,
        keyID: options.keyID,
        privateKeyPEM: key,
        endpoint: endpoint,
        pool: .init(maximumConnections: options.connections, maximumStreamsPerConnection: options.streamsPerConnection)
    )
)

// ~300 bytes, shaped like a ride ETA update.
func payload(_ index: Int) -> [UInt8] {
    let now = Int(Date().timeIntervalSince1970)
    let json = #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"driverName":"Ana Souza","driverPhoto":"https://cdn.example.com/d/ana.jpg","vehicleDescription":"Blue Honda Civic · KX-4242","etaStartSeconds":\#(300 + index % 60),"etaEndSeconds":\#(420 + index % 60),"status":"enRoute","distanceRemaining":\#(1840 - index % 100)},"stale-date":\#(now + 900),"relevance-score":50}}"#
    return Array(json.utf8)
}
let tokens = (0..<1024).map { _ in (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
let payloads = (0..<64).map(payload)
print("payload size: \(payloads[0].count) bytes; pushes: \(options.count); concurrency: \(options.concurrency); connections: \(options.connections) × \(options.streamsPerConnection) streams")

// Warm-up: opens the connections and mints the token outside the measured window.
for index in 0..<200 {
    _ = try? await client.send(.init(deviceToken: tokens[index % tokens.count], payload: payloads[0], priority: .low))
}

/// Runs the measured loop off the main actor: top-level variables in main.swift are main-actor
/// isolated, and closures touching them would serialise every push on the main thread.
nonisolated func runWorkers(
    client: APNsClient,
    count: Int,
    concurrency: Int,
    tokens: [String],
    payloads: [[UInt8]]
) async -> (latencies: [UInt64], failures: Int) {
    await withTaskGroup(of: ([UInt64], Int).self) { group in
        let workers = min(concurrency, count)
        for worker in 0..<workers {
            group.addTask {
                let clock = ContinuousClock()
                var latencies: [UInt64] = []
                latencies.reserveCapacity(count / workers + 1)
                var failures = 0
                var index = worker
                while index < count {
                    let push = APNsLiveActivityPush(
                        deviceToken: tokens[index % tokens.count],
                        payload: payloads[index % payloads.count],
                        priority: index % 10 == 0 ? .high : .low,
                        expiration: .immediately
                    )
                    let sent = clock.now
                    do {
                        _ = try await client.send(push)
                    } catch {
                        failures += 1
                    }
                    let elapsed = clock.now - sent
                    latencies.append(
                        UInt64(elapsed.components.seconds) * 1_000_000
                            + UInt64(elapsed.components.attoseconds / 1_000_000_000_000)
                    )
                    index += workers
                }
                return (latencies, failures)
            }
        }
        var all: [UInt64] = []
        var failures = 0
        for await (latencies, failed) in group {
            all.append(contentsOf: latencies)
            failures += failed
        }
        return (all, failures)
    }
}

let clock = ContinuousClock()
let cpuAtStart = ProcessUsage.cpuSeconds()
let start = clock.now
let (latencies, failures) = await runWorkers(
    client: client,
    count: options.count,
    concurrency: options.concurrency,
    tokens: tokens,
    payloads: payloads
)
let elapsed = clock.now - start
let cpuUsed = ProcessUsage.cpuSeconds() - cpuAtStart
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
for latency in latencies { _ = histogram.record(max(1, latency)) }

print(String(format: "sent %d pushes in %.2f s: %.0f pushes/s, %d failed", latencies.count, seconds, Double(latencies.count) / seconds, failures))
print(String(format: "latency p50 %.2f ms, p99 %.2f ms, max %.2f ms",
             Double(histogram.valueAtPercentile(50)) / 1000,
             Double(histogram.valueAtPercentile(99)) / 1000,
             Double(histogram.max) / 1000))
print(String(
    format: "CPU: %.1f µs per push (user+sys, %@), %.2f cores busy on average",
    cpuUsed / Double(max(1, latencies.count)) * 1e6,
    simulator == nil ? "client only" : "client and simulator",
    cpuUsed / seconds
))
if let simulator {
    let statistics = simulator.statistics
    print("simulator: \(statistics.requests) requests, statuses \(statistics.responsesByStatus), connections \(statistics.connectionsAccepted), max concurrent streams seen \(statistics.maximumObservedConcurrentStreams)")
}
print(String(format: "peak RSS (VmHWM): %.1f MiB", ProcessUsage.peakRSSMebibytes()))

await client.shutdown()
try await simulator?.stop()
