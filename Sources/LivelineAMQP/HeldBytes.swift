/// The body bytes of one consumer's deliveries that are delivered and not yet settled, for
/// ``AMQPConfiguration/maximumHeldBytes``. Owner thread only.
///
/// By delivery tag, since a settlement names tags: one, or every tag up to one (`multiple`).
struct HeldBytes {
    private var byTag: [UInt64: Int] = [:]
    /// The sum of the bytes held.
    private(set) var total = 0

    mutating func delivered(_ tag: UInt64, bytes: Int) {
        byTag[tag] = bytes
        total += bytes
    }

    /// `tag`, or with `multiple` every tag up to it, was settled.
    mutating func settled(_ tag: UInt64, multiple: Bool) {
        guard multiple else {
            if let bytes = byTag.removeValue(forKey: tag) { total -= bytes }
            return
        }
        for (held, bytes) in byTag where held <= tag {
            byTag[held] = nil
            total -= bytes
        }
    }
}
