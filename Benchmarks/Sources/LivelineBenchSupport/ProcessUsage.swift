#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

// Tests: scripts/bench-smoke

/// What the benchmark processes print about themselves: peak memory and CPU time.
public enum ProcessUsage {
    /// Peak resident set size of this process (the kernel's high-water mark, VmHWM), in
    /// MiB; 0 where there is no procfs.
    public static func peakRSSMebibytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kibibytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kibibytes / 1024
    }

    /// CPU time (user + system) this process used so far, in seconds. The difference over
    /// a measured window, divided by the work done, is the CPU cost per item; divided by
    /// the wall time, the cores used.
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        let who = RUSAGE_SELF.rawValue
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

extension ProcessUsage {
    /// Another process's CPU time and memory so far, from procfs.
    public struct Snapshot: Sendable, Codable {
        public var cpuSeconds: Double
        /// The kernel's high-water mark (VmHWM).
        public var peakRSSMiB: Double
        /// Resident now (VmRSS).
        public var rssMiB: Double
    }

    /// Nil where there is no procfs or the process is gone.
    public static func of(pid: Int32) -> Snapshot? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = stat.lastIndex(of: ")"),
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        else { return nil }
        // Fields after the name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        func mebibytes(_ field: String) -> Double {
            (status.split(separator: "\n").first { $0.hasPrefix(field) }
                .flatMap { Double($0.split(separator: " ").dropFirst().first ?? "") } ?? 0) / 1024
        }
        return Snapshot(
            cpuSeconds: (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))),
            peakRSSMiB: mebibytes("VmHWM:"), rssMiB: mebibytes("VmRSS:"))
    }
}

/// The local RabbitMQ nodes (their `beam.smp` processes), so a benchmark can say how much
/// of the machine the broker took for the same work: one node, or each node of the
/// cluster in network namespaces. Nil when the broker runs elsewhere or there is no procfs.
public struct BrokerUsage: Sendable {
    public struct Node: Sendable {
        /// The Erlang node name (`rabbit@llcl2`), or `pid N` where it cannot be read.
        public let name: String
        public let pid: Int32
    }

    /// Sorted by name.
    public let nodes: [Node]

    /// Finds the local broker nodes, if there are any.
    public init?() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        var nodes: [Node] = []
        for entry in entries where entry.allSatisfy(\.isNumber) {
            let comm = (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8)) ?? ""
            guard comm.hasPrefix("beam.smp"), let pid = Int32(entry) else { continue }
            // The node's name is in its environment (readable by its user and root), not its arguments.
            let environment = ((try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/environ"))) ?? Data())
                .split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let name = environment.first { $0.hasPrefix("RABBITMQ_NODENAME=") }?.dropFirst("RABBITMQ_NODENAME=".count)
            nodes.append(Node(name: name.map(String.init) ?? "pid \(pid)", pid: pid))
        }
        guard !nodes.isEmpty else { return nil }
        self.nodes = nodes.sorted { $0.name < $1.name }
    }

    /// User + system CPU seconds the broker's nodes used so far, together.
    public func cpuSeconds() -> Double { nodes.reduce(0) { $0 + (ProcessUsage.of(pid: $1.pid)?.cpuSeconds ?? 0) } }

    /// Each node's usage, named `broker` for one node and `broker <node>` for each of several.
    public func snapshots() -> [String: ProcessUsage.Snapshot] {
        var snapshots: [String: ProcessUsage.Snapshot] = [:]
        for node in nodes {
            snapshots[nodes.count == 1 ? "broker" : "broker \(node.name)"] = ProcessUsage.of(pid: node.pid)
        }
        return snapshots
    }
}
