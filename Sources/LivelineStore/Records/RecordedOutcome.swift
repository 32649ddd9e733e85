import Foundation

// Tests: none needed (declarations only)

/// An outcome the api heard on `liveline.outcomes`, kept for `GET /v1/events/{id}` as long
/// as event ids are (``ActivityStore/recordOutcomes(_:)``).
public struct RecordedOutcome: Sendable, Hashable {
    /// The outcome CloudEvent's `id`: the same each time an outcome is reported again.
    public var outcomeID: String
    /// The event it is about.
    public var eventID: String
    public var domain: String
    public var at: Date
    /// The outcome CloudEvent as it was published.
    public var body: String

    public init(outcomeID: String, eventID: String, domain: String, at: Date, body: String) {
        self.outcomeID = outcomeID
        self.eventID = eventID
        self.domain = domain
        self.at = at
        self.body = body
    }
}
