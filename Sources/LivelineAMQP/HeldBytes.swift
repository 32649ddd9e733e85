import DequeModule

/// The body bytes of one consumer's deliveries that are delivered and not yet settled, for
/// ``AMQPConfiguration/maximumHeldBytes``. Owner thread only.
///
/// By delivery tag, since a settlement names tags: one, or every tag up to one (`multiple`).
/// A channel numbers its deliveries upwards and most settlements free the oldest, so the
/// deliveries are kept in tag order and mostly leave from the front.
struct HeldBytes {
    private var held: Deque<(tag: UInt64, bytes: Int)> = []
    /// The sum of the bytes held.
    private(set) var total = 0

    mutating func delivered(_ tag: UInt64, bytes: Int) {
        held.append((tag, bytes))
        total += bytes
    }

    /// `tag`, or with `multiple` every tag up to it, was settled.
    mutating func settled(_ tag: UInt64, multiple: Bool) {
        if multiple {
            while let first = held.first, first.tag <= tag {
                total -= first.bytes
                held.removeFirst()
            }
        } else if let index = held.firstIndex(where: { $0.tag >= tag }), held[index].tag == tag {
            total -= held[index].bytes
            held.remove(at: index)
        }
    }
}
