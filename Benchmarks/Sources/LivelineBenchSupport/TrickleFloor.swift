#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What this machine charges work that arrives in a trickle, measured without Liveline: one
/// fixed unit of work done back to back, and after a pause before each unit.
///
/// A worker at a steady 1,000 events/s does a batch, then sleeps until the next one (the
/// translator's linger, 10 ms). If the machine loses the worker's caches while it sleeps, every
/// batch starts cold and costs more CPU than the same batch in a drain, whatever the code. This
/// measures that factor for working sets of a few sizes, so a worker's CPU per event at a
/// trickle can be read against the floor of the machine it ran on (docs/PERFORMANCE.md).
public enum TrickleFloor {
    /// How the unit waits before it runs.
    public enum Wait: String, Codable, Sendable, Hashable {
        /// No pause: the reference, caches as warm as they get.
        case none
        /// The thread sleeps, and its core may idle, as a worker's does between batches.
        case sleep
        /// The thread spins on the clock: time passes but the core never idles, which tells
        /// what idling costs apart from what others running meanwhile cost.
        case spin
    }

    /// One way of running the unit.
    public struct Setting: Codable, Sendable, Hashable {
        public var workingSetKiB: Int
        public var wait: Wait
        /// The pause before each unit; 0 with ``Wait/none``.
        public var gapMilliseconds: Int

        public init(workingSetKiB: Int, wait: Wait, gapMilliseconds: Int) {
            self.workingSetKiB = workingSetKiB
            self.wait = wait
            self.gapMilliseconds = wait == .none ? 0 : gapMilliseconds
        }
    }

    /// Runs the walk `units` times, each after the setting's pause, and returns the CPU time of
    /// each unit alone in microseconds (this thread's clock, so the pause is not counted). One
    /// unit first, untimed, touches the working set.
    public static func measure(_ walk: CacheWalk, steps: Int, units: Int, setting: Setting) -> [Double] {
        walk.walk(steps: steps)
        var costs: [Double] = []
        costs.reserveCapacity(units)
        for _ in 0..<units {
            pause(setting)
            let start = clock(CLOCK_THREAD_CPUTIME_ID)
            walk.walk(steps: steps)
            costs.append(Double(clock(CLOCK_THREAD_CPUTIME_ID) - start) / 1_000)
        }
        return costs
    }

    /// The value below which `fraction` of `values` lie (nearest rank); 0 for none.
    public static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    private static func pause(_ setting: Setting) {
        let nanoseconds = Int64(setting.gapMilliseconds) * 1_000_000
        switch setting.wait {
        case .none:
            return
        case .sleep:
            var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
        case .spin:
            let end = clock(CLOCK_MONOTONIC) + nanoseconds
            while clock(CLOCK_MONOTONIC) < end {}
        }
    }

    private static func clock(_ id: clockid_t) -> Int64 {
        var now = timespec()
        clock_gettime(id, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// A fixed unit of work over a working set of a chosen size: a walk through its cache lines in
/// one random cycle, so each step is a load that depends on the one before and that no
/// prefetcher can guess, with a little arithmetic on what it read. Warm, a step costs a cache
/// hit; cold, a miss to the next level or to memory.
public final class CacheWalk {
    /// Bytes in a cache line, and `Int`s in one.
    static let lineBytes = 64
    static let wordsPerLine = lineBytes / MemoryLayout<Int>.stride

    public let lines: Int
    /// At the first word of each line, the index of the next line's first word.
    private let words: UnsafeMutableBufferPointer<Int>
    private var position = 0
    private var hash: UInt64 = 0xcbf2_9ce4_8422_2325

    /// - Parameters:
    ///   - workingSetKiB: the memory the walk goes through, at least one line.
    ///   - seed: fixes the cycle, so runs walk the same order.
    public init(workingSetKiB: Int, seed: UInt64 = 1) {
        lines = max(1, workingSetKiB * 1024 / Self.lineBytes)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: lines * Self.lineBytes, alignment: Self.lineBytes)
        words = UnsafeMutableBufferPointer(
            start: raw.initializeMemory(as: Int.self, repeating: 0, count: lines * Self.wordsPerLine),
            count: lines * Self.wordsPerLine)
        var order = Array(0..<lines)
        var generator = SplitMix64(seed: seed)
        order.shuffle(using: &generator)
        for (index, line) in order.enumerated() {
            words[line * Self.wordsPerLine] = order[(index + 1) % lines] * Self.wordsPerLine
        }
    }

    deinit { words.baseAddress.map { UnsafeMutableRawPointer($0).deallocate() } }

    /// Takes `steps` steps from where the last walk stopped; returns a running hash of the lines
    /// visited, so the work cannot be optimized away.
    @discardableResult
    public func walk(steps: Int) -> UInt64 {
        var position = self.position
        var hash = self.hash
        for _ in 0..<steps {
            position = words[position]
            hash = (hash ^ UInt64(truncatingIfNeeded: position)) &* 0x100_0000_01b3
            hash ^= hash >> 13
        }
        self.position = position
        self.hash = hash
        return hash
    }

    /// The lines a walk visits before it is back where it started: every line, when the cycle
    /// is one (more than `lines` means it never came back).
    public func cycleLength() -> Int {
        var position = words[0]
        var count = 1
        while position != 0, count <= lines {
            position = words[position]
            count += 1
        }
        return count
    }
}

/// A small, seeded generator (SplitMix64), so a walk's cycle is the same from run to run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
