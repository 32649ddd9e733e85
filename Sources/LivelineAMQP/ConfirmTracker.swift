// Tests: Tests/LivelineAMQPTests/AckCoalescerTests.swift

/// Publishes waiting for their broker confirm on one channel, keyed by delivery tag.
///
/// Publisher-confirm tags are dense and ascending (1, 2, 3, … per channel), and the broker
/// settles them with `basic.ack`/`basic.nack`, either one tag or every tag up to one
/// (`multiple`). A sliding array indexed by `tag - base` makes both O(settled).
struct ConfirmTracker<Item> {
    /// The tag the next publish on this channel gets.
    private(set) var nextTag: UInt64 = 1
    private var base: UInt64 = 1
    private var slots: [Item?] = []
    private var head = 0
    private(set) var count = 0

    /// Records a publish and returns its delivery tag.
    mutating func register(_ item: Item) -> UInt64 {
        let tag = nextTag
        nextTag += 1
        slots.append(item)
        count += 1
        return tag
    }

    /// Removes and returns the items a confirm covers, in tag order.
    mutating func settle(tag: UInt64, multiple: Bool) -> [(tag: UInt64, item: Item)] {
        guard tag >= base, tag < nextTag else { return [] }
        // Labelled as the result is: an unlabelled array was converted by a runtime cast.
        var settled: [(tag: UInt64, item: Item)] = []
        let last = Int(tag - base)
        let first = multiple ? head : last
        if first <= last {
            settled.reserveCapacity(last - first + 1)
            for index in first...last {
                if let item = slots[index] {
                    settled.append((base + UInt64(index), item))
                    slots[index] = nil
                    count -= 1
                }
            }
        }
        compact()
        return settled
    }

    /// The lowest unconfirmed tag (settling moves `head` past settled slots).
    var oldestTag: UInt64? { count == 0 ? nil : base + UInt64(head) }

    /// The item with this tag, if still unconfirmed.
    func item(tag: UInt64) -> Item? {
        guard tag >= base, tag < nextTag else { return nil }
        return slots[Int(tag - base)]
    }

    /// The lowest unconfirmed tag whose item matches.
    func firstTag(where matches: (Item) -> Bool) -> UInt64? {
        for index in head..<slots.count {
            if let item = slots[index], matches(item) { return base + UInt64(index) }
        }
        return nil
    }

    /// The lowest unconfirmed tag above `tag` whose item matches.
    func firstTag(after tag: UInt64, where matches: (Item) -> Bool) -> UInt64? {
        let start = max(head, Int(tag + 1 - base))
        guard start < slots.count else { return nil }
        for index in start..<slots.count {
            if let item = slots[index], matches(item) { return base + UInt64(index) }
        }
        return nil
    }

    /// Empties the tracker (the channel is gone) and restarts tags at 1, returning what was
    /// unconfirmed in tag order.
    mutating func reset() -> [Item] {
        let pending = slots[head...].compactMap { $0 }
        self = ConfirmTracker()
        return pending
    }

    private mutating func compact() {
        while head < slots.count, slots[head] == nil { head += 1 }
        if head == slots.count {
            base += UInt64(head)
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096, head * 2 > slots.count {
            base += UInt64(head)
            slots.removeFirst(head)
            head = 0
        }
    }
}
