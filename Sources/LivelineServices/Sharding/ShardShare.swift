/// A worker's fair share of a stage's shards, and the one step that moves it towards it.
///
/// Every worker decides alone, from what the broker shows it: how many workers are live (the
/// consumers of the stage's workers queue), and how many of them hold fewer shards than
/// their share and found none free (the consumers of its hungry queue). Each worker holds
/// between ``fewest`` and ``most`` shards, so counts differ by one at most.
///
/// A worker over ``most`` gives up the excess. A worker under ``fewest`` claims free shards,
/// and when none is free it says it is hungry, so a worker over ``fewest`` gives one up. A
/// worker claims up to ``most`` only while nobody is hungry: a freed shard goes first to the
/// worker that needs it.
struct ShardShare: Sendable, Equatable {
    /// The stage's shard count.
    let shards: Int
    /// The live workers, this one included.
    let workers: Int

    init(shards: Int, workers: Int) {
        self.shards = shards
        self.workers = max(1, workers)
    }

    /// The fewest shards a worker should hold.
    var fewest: Int { shards / workers }

    /// The most shards a worker may hold.
    var most: Int { fewest + (shards % workers == 0 ? 0 : 1) }

    enum Step: Sendable, Equatable {
        /// Give up this many shards (after draining each).
        case release(Int)
        /// Claim up to this many free shards.
        case claim(Int)
        /// Hold what is held.
        case hold
    }

    /// What a worker holding `holding` shards does next, while `hungry` workers want one.
    func step(holding: Int, hungry: Int) -> Step {
        if holding > most { return .release(holding - most) }
        if hungry > 0, holding > fewest { return .release(1) }
        if holding < fewest { return .claim(fewest - holding) }
        if hungry == 0, holding < most { return .claim(most - holding) }
        return .hold
    }

    /// Whether a worker holding `holding` shards, with no free shard to claim, is hungry.
    func isHungry(holding: Int) -> Bool { holding < fewest }
}
