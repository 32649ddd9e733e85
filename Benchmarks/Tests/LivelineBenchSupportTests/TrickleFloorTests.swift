@testable import LivelineBenchSupport
import Testing

/// The trickle floor's unit of work must be what it claims: a walk through every line of its
/// working set, the same from run to run, timed without its pause.
@Suite struct TrickleFloorTests {
    @Test(arguments: [4, 32, 256, 1024])
    func theWalkVisitsEveryLineOnceInOneCycle(kibibytes: Int) {
        let walk = CacheWalk(workingSetKiB: kibibytes)
        #expect(walk.lines == kibibytes * 1024 / 64)
        #expect(walk.cycleLength() == walk.lines)
    }

    @Test func theSameSeedWalksTheSameOrderAndAnotherSeedAnother() {
        let first = CacheWalk(workingSetKiB: 64).walk(steps: 5_000)
        #expect(CacheWalk(workingSetKiB: 64).walk(steps: 5_000) == first)
        #expect(CacheWalk(workingSetKiB: 64, seed: 2).walk(steps: 5_000) != first)
    }

    @Test func aWalkGoesOnFromWhereTheLastStopped() {
        let halves = CacheWalk(workingSetKiB: 64)
        halves.walk(steps: 700)
        let whole = CacheWalk(workingSetKiB: 64)
        #expect(halves.walk(steps: 300) == whole.walk(steps: 1_000))
    }

    @Test func eachUnitIsTimedAloneWithoutItsPause() {
        let setting = TrickleFloor.Setting(workingSetKiB: 32, wait: .sleep, gapMilliseconds: 5)
        let costs = TrickleFloor.measure(CacheWalk(workingSetKiB: 32), steps: 1_000, units: 10, setting: setting)
        #expect(costs.count == 10)
        #expect(costs.allSatisfy { $0 > 0 })
        // A thread's CPU clock does not run while it sleeps: a walk of 1,000 lines is far
        // shorter than the 5 ms before it.
        #expect(costs.allSatisfy { $0 < 5_000 }, "\(costs)")
    }

    @Test(arguments: [TrickleFloor.Wait.sleep, .spin])
    func eachUnitWaitsItsPauseFirst(wait: TrickleFloor.Wait) {
        let setting = TrickleFloor.Setting(workingSetKiB: 32, wait: wait, gapMilliseconds: 2)
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            _ = TrickleFloor.measure(CacheWalk(workingSetKiB: 32), steps: 100, units: 10, setting: setting)
        }
        #expect(elapsed >= .milliseconds(20), "\(elapsed)")
    }

    @Test func backToBackHasNoGap() {
        #expect(TrickleFloor.Setting(workingSetKiB: 32, wait: .none, gapMilliseconds: 10).gapMilliseconds == 0)
        #expect(TrickleFloor.Setting(workingSetKiB: 32, wait: .spin, gapMilliseconds: 10).gapMilliseconds == 10)
    }

    @Test func percentilesAreNearestRank() {
        let values: [Double] = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]
        #expect(TrickleFloor.percentile(values, 0.5) == 5)
        #expect(TrickleFloor.percentile(values, 0.9) == 9)
        #expect(TrickleFloor.percentile(values, 1) == 10)
        #expect(TrickleFloor.percentile([42], 0.5) == 42)
        #expect(TrickleFloor.percentile([], 0.5) == 0)
    }
}
