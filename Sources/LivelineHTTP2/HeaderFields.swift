import NIOHPACK

// Tests: Tests/LivelineHTTP2Tests/HeaderBlockEncoderTests.swift

/// A header field name, with its place in RFC 7541's static table found once, when the name
/// is made. The client's names are constants, so the encoder never searches the table for
/// them: searching by name for every field cost the sender 1,850 instructions a push.
package struct HeaderName: Sendable {
    package let text: String
    /// The static table's first index for the name, 0 when it has none.
    let staticIndex: Int
    /// How many of the static table's entries have the name.
    let staticCount: Int

    package init(_ text: String) {
        self.text = text
        (staticIndex, staticCount) = StaticTable.lookup(name: text)
    }
}

/// An ordered header list, each field with its HPACK indexing: what ``HeaderBlockEncoder``
/// encodes. NIO's `HPACKHeaders` checks every byte of a name as it is added (3,000
/// instructions a push); these names are made once, from the caller's constants.
package struct HeaderFields: Sendable {
    package struct Field: Sendable {
        package var name: HeaderName
        package var value: String
        package var indexing: HPACKIndexing
    }

    package private(set) var fields: [Field] = []

    package init() {}

    /// NIO's header list, for callers that hold one.
    package init(_ headers: HPACKHeaders) {
        fields.reserveCapacity(headers.count)
        for (name, value, indexing) in headers { add(HeaderName(name), value, indexing: indexing) }
    }

    package mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    package mutating func add(_ name: HeaderName, _ value: String, indexing: HPACKIndexing = .indexable) {
        fields.append(Field(name: name, value: value, indexing: indexing))
    }

    /// Adds the field after removing every other field of the same name.
    package mutating func replaceOrAdd(_ name: HeaderName, _ value: String, indexing: HPACKIndexing = .indexable) {
        fields.removeAll { $0.name.text == name.text }
        add(name, value, indexing: indexing)
    }
}
