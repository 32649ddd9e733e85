import Foundation

// Tests: Tests/LivelineStoreTests/ChannelAndTraceConformanceTests.swift

/// Which lines of an activity's trace a reader wants: `liveline trace --kind … --device …`.
public struct TraceFilter: Sendable, Hashable {
    /// Only lines of these kinds; empty takes every kind.
    public var kinds: Set<TraceEntry.Kind>
    /// Only lines whose detail contains this text, compared byte for byte: trace details name
    /// a device as `token <prefix>…`, so a token prefix picks one device's lines.
    public var detailContains: String?

    public init(kinds: Set<TraceEntry.Kind> = [], detailContains: String? = nil) {
        self.kinds = kinds
        self.detailContains = detailContains
    }

    /// Whether the filter takes every line.
    public var takesEverything: Bool { kinds.isEmpty && (detailContains ?? "").isEmpty }

    /// The same test as the stores' queries, for lines read without it (`--follow`).
    public func matches(_ entry: TraceEntry) -> Bool {
        if !kinds.isEmpty, !kinds.contains(entry.kind) { return false }
        if let text = detailContains, !text.isEmpty, entry.detail.range(of: text, options: .literal) == nil { return false }
        return true
    }
}

/// The newest lines of an activity's trace and how many matched in all, so a reader can say
/// how many it left out.
public struct TraceTail: Sendable, Hashable {
    /// The newest lines that matched, oldest first.
    public var lines: [TraceLine]
    /// How many lines matched, shown or not.
    public var matching: Int

    public init(lines: [TraceLine], matching: Int) {
        self.lines = lines
        self.matching = matching
    }

    /// How many matching lines were left out: all of them older than the first shown.
    public var leftOut: Int { max(0, matching - lines.count) }
}
