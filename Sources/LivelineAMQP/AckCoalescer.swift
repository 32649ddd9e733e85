/// Turns many single acks on one consumer channel into few `basic.ack` frames.
///
/// Deliveries on a channel carry ascending tags. When the acks the application made form a
/// run that starts at the lowest unsettled tag, one `multiple` ack settles the whole run.
/// Acks above a gap (a message still being worked on) wait up to ``hold`` for the gap to
/// fill, which it usually does within milliseconds when work finishes out of order, so
/// one multiple ack covers them too; after that they are acked one by one, so a slow
/// message never holds back the prefetch window for long. Each frame is work for the
/// broker as well as for us.
struct AckCoalescer {
    /// How long acks above a gap wait for it to fill.
    static let hold: Duration = .milliseconds(20)

    /// A frame to send to the broker.
    enum Frame: Equatable {
        case ack(tag: UInt64, multiple: Bool)
    }

    /// Every tag below this is settled.
    private(set) var settledBelow: UInt64 = 1
    /// Tags at or above `settledBelow` that were settled out of order.
    private var settledAbove: Set<UInt64> = []
    private var pending: [UInt64] = []
    /// Since when acks above a gap have been waiting.
    private var heldSince: ContinuousClock.Instant?

    var hasPending: Bool { !pending.isEmpty }

    /// Queues an ack of one tag until ``flush()``.
    mutating func ack(_ tag: UInt64) {
        if tag >= settledBelow { pending.append(tag) }
    }

    /// Records that `tag` (or every tag up to it) was settled by a frame sent directly
    /// (nack, reject, or an explicit multiple ack).
    mutating func settledDirectly(_ tag: UInt64, multiple: Bool) {
        if multiple {
            if tag >= settledBelow {
                settledBelow = tag + 1
                settledAbove = settledAbove.filter { $0 > tag }
            }
        } else if tag >= settledBelow {
            settledAbove.insert(tag)
        }
        advance()
    }

    /// The frames that settle the queued acks: all of them when `force` is set (before a
    /// nack, reject, explicit ack or close), otherwise all but those above a gap that have
    /// waited less than ``hold``.
    mutating func flush(now: ContinuousClock.Instant = .now, force: Bool = true) -> [Frame] {
        guard !pending.isEmpty else { return [] }
        pending.sort()
        var frames: [Frame] = []
        var index = 0
        // The run starting at the watermark collapses into one multiple ack.
        if pending[0] == settledBelow {
            var end = pending[0]
            index = 1
            while index < pending.count {
                let next = pending[index]
                if next == end + 1 {
                    end = next
                } else if next > end + 1, settledAbove.contains(end + 1) {
                    // A tag settled by nack/reject sits in the run; a multiple ack would not
                    // touch it again, so the run can skip over it.
                    var probe = end + 1
                    while settledAbove.contains(probe) { probe += 1 }
                    guard probe == next else { break }
                    end = next
                } else if next <= end {
                    // duplicate
                } else {
                    break
                }
                index += 1
            }
            frames.append(.ack(tag: end, multiple: end > pending[0]))
            settledBelow = end + 1
            settledAbove = settledAbove.filter { $0 > end }
        }
        if index < pending.count, !force {
            let since = heldSince ?? now
            if now - since < Self.hold {
                heldSince = since
                pending = pending[index...].filter { $0 >= settledBelow && !settledAbove.contains($0) }
                advance()
                return frames
            }
        }
        heldSince = nil
        var previous: UInt64? = nil
        while index < pending.count {
            let tag = pending[index]
            if tag != previous, tag >= settledBelow, !settledAbove.contains(tag) {
                frames.append(.ack(tag: tag, multiple: false))
                settledAbove.insert(tag)
            }
            previous = tag
            index += 1
        }
        pending.removeAll(keepingCapacity: true)
        advance()
        return frames
    }

    private mutating func advance() {
        while settledAbove.remove(settledBelow) != nil { settledBelow += 1 }
    }
}
