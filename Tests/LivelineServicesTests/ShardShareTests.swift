import Testing

@testable import LivelineServices

/// The balancing rule alone: workers that each take one ``ShardShare`` step per tick, in a
/// shuffled order, claiming free shards from one pool as the leases on the broker would.
struct ShardShareTests {
    @Test(arguments: [(8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (4, 8), (16, 3), (64, 7)])
    func workersConvergeOnSharesWithinOneOfEachOther(shards: Int, workers: Int) {
        var cluster = Cluster(shards: shards, workers: workers)
        cluster.settle()
        cluster.expectBalanced()
    }

    @Test func fourWorkersHoldTwoOfEightAndThreeHoldAllAfterOneLeaves() {
        var cluster = Cluster(shards: 8, workers: 4)
        cluster.settle()
        #expect(cluster.holdings.map(\.count).sorted() == [2, 2, 2, 2])
        cluster.remove(worker: 1)
        cluster.settle()
        #expect(cluster.holdings.map(\.count).reduce(0, +) == 8)
        #expect(cluster.holdings.map(\.count).sorted() == [2, 3, 3])
    }

    @Test func aJoiningWorkerIsFedByTheOthers() {
        // In every order the workers may act in: the newcomer needs two shards, and while it
        // is hungry each worker above its share may give one more, which it takes back later.
        for _ in 0..<50 {
            var cluster = Cluster(shards: 8, workers: 2)
            cluster.settle()
            #expect(cluster.holdings.map(\.count) == [4, 4])
            cluster.add()
            let moves = cluster.settle()
            cluster.expectBalanced()
            #expect((2...4).contains(moves), "\(moves) handovers")
        }
    }

    @Test func aWorkerBeyondTheShardCountStandsBy() {
        let share = ShardShare(shards: 2, workers: 3)
        #expect(share.fewest == 0 && share.most == 1)
        #expect(share.step(holding: 0, hungry: 0) == .claim(1))
        #expect(!share.isHungry(holding: 0))
        #expect(share.step(holding: 2, hungry: 0) == .release(1))
    }

    @Test func aHungryWorkerTakesPrecedenceOverTopUps() {
        let share = ShardShare(shards: 8, workers: 5)
        #expect(share.fewest == 1 && share.most == 2)
        #expect(share.step(holding: 1, hungry: 1) == .hold)
        #expect(share.step(holding: 2, hungry: 1) == .release(1))
        #expect(share.step(holding: 0, hungry: 1) == .claim(1))
        #expect(share.step(holding: 1, hungry: 0) == .claim(1))
    }
}

/// Workers and a pool of free shards; a tick lets every worker take one step.
private struct Cluster {
    let shards: Int
    var holdings: [Set<Int>]
    var hungry: Set<Int> = []

    init(shards: Int, workers: Int) {
        self.shards = shards
        holdings = Array(repeating: [], count: workers)
    }

    var free: Set<Int> { Set(0..<shards).subtracting(holdings.reduce(into: Set<Int>()) { $0.formUnion($1) }) }

    mutating func add() { holdings.append([]) }

    mutating func remove(worker: Int) {
        holdings.remove(at: worker)
        hungry = []
    }

    /// Ticks until nothing changes for three ticks; returns how many shards changed hands.
    @discardableResult
    mutating func settle() -> Int {
        var released = 0
        var quiet = 0
        for _ in 0..<200 where quiet < 3 {
            let before = holdings
            released += tick()
            quiet = holdings == before ? quiet + 1 : 0
        }
        #expect(quiet >= 3, "did not settle: \(holdings.map(\.count))")
        return released
    }

    private mutating func tick() -> Int {
        var released = 0
        for worker in holdings.indices.shuffled() {
            let share = ShardShare(shards: shards, workers: holdings.count)
            switch share.step(holding: holdings[worker].count, hungry: hungry.count) {
            case .release(let count):
                for shard in holdings[worker].sorted().suffix(count) { holdings[worker].remove(shard) }
                released += count
            case .claim(let count):
                for shard in free.shuffled().prefix(count) { holdings[worker].insert(shard) }
            case .hold:
                break
            }
            if share.isHungry(holding: holdings[worker].count) { hungry.insert(worker) } else { hungry.remove(worker) }
        }
        return released
    }

    func expectBalanced() {
        let counts = holdings.map(\.count)
        #expect(counts.reduce(0, +) == shards, "every shard held: \(counts)")
        #expect((counts.max() ?? 0) - (counts.min() ?? 0) <= 1, "within one: \(counts)")
    }
}
