import Testing

@testable import LivelineAMQP

@Suite struct StringInternerTests {
    /// The bytes of `text` as the broker's frame would hand them over.
    func intern(_ text: String, in names: inout StringInterner) -> String {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { names.string(UnsafeRawBufferPointer($0)) }
    }

    /// Whether two strings share one buffer: an interned name is not allocated again.
    func sameStorage(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { first in b.withUTF8 { second in first.baseAddress == second.baseAddress } }
    }

    @Test func aRecurringNameIsTheSameStringEachTime() {
        var names = StringInterner()
        let first = intern("x-liveline-published-at", in: &names)
        let again = intern("x-liveline-published-at", in: &names)
        #expect(first == "x-liveline-published-at" && again == first)
        #expect(sameStorage(first, again))
        // Built without the interner, the same text is a buffer of its own.
        #expect(!sameStorage(first, String(decoding: Array("x-liveline-published-at".utf8), as: UTF8.self)))
    }

    @Test func everyTextComesBackAsItWasWhateverTheSlots() {
        var names = StringInterner()
        // More distinct names than slots, so some share a slot and replace each other.
        let texts = (0..<600).map { "x-liveline-header-number-\($0)" } + ["", "short", String(repeating: "a", count: 200)]
        for _ in 0..<2 {
            for text in texts { #expect(intern(text, in: &names) == text) }
        }
    }
}
