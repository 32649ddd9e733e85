import Foundation

/// CPU time this process has used (user + system), to report figures that hold when other
/// builds share the machine's cores.
enum ProcessCPUTime {
    static func now() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
