// Tests: Tests/LivelineCoreTests/JSONValueDecoderTests.swift, Tests/LivelineCodecsTests/JSONWriterTests.swift, Tests/LivelineCodecsTests/FoundationEquivalenceTests.swift

/// Where a value sits for `JSONValueDecoder` and `JSONValueEncoder`: its container's coding path
/// and its key or index there. The path is joined only when an error or a nested container asks
/// for it; joining it for every field was an array allocation each.
struct CodingLocation {
    var parent: [any CodingKey]
    var key: (any CodingKey)?

    /// The top level.
    static var root: CodingLocation { CodingLocation(parent: [], key: nil) }

    var path: [any CodingKey] { key.map { parent + [$0] } ?? parent }
}

extension Double {
    /// This double as the integer its shortest form spells without the trailing `.0`: a whole
    /// number below 2^53 prints as plain digits (larger ones may print with an exponent), so it
    /// needs no formatting to know. Nil for anything else. -0.0 gives 0.
    var plainWholeNumber: Int64? {
        rounded(.towardZero) == self && magnitude < 9e15 ? Int64(self) : nil
    }
}
