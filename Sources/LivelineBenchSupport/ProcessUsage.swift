#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

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
