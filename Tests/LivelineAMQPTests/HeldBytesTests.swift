import Testing

@testable import LivelineAMQP

@Suite struct HeldBytesTests {
    /// Each settlement frees what its tags held: one tag, or every tag up to one; a tag
    /// settled twice, or never delivered (from before a reconnect), frees nothing.
    @Test func settlementsFreeWhatTheirTagsHeld() {
        var held = HeldBytes()
        for tag in 1...5 { held.delivered(UInt64(tag), bytes: tag * 100) }
        #expect(held.total == 1_500)
        held.settled(4, multiple: false)
        #expect(held.total == 1_100)
        held.settled(4, multiple: false)
        held.settled(9, multiple: false)
        #expect(held.total == 1_100)
        held.settled(3, multiple: true)
        #expect(held.total == 500, "1, 2 and 3 freed; 4 was already")
        held.delivered(6, bytes: 50)
        held.settled(6, multiple: true)
        #expect(held.total == 0)
    }
}
