import Foundation
import LivelineCore

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// The dead letter for a message the translator could not parse.
enum RejectedEvent {
    /// Builds the dead letter, with the domain, activity and event id when the bytes
    /// still reveal them, so on-call can filter a bad producer's letters.
    static func deadLetter(body: Data, error: EventError, at now: EventTime) -> DeadLetter {
        var letter = DeadLetter(rejecting: body, error: error, at: now)
        switch error {
        case .notJSON, .tooLarge:
            // Nothing to read, or too much to read again.
            return letter
        default:
            guard let identity = EventIdentity(peeking: body) else { return letter }
            letter.eventId = identity.eventId
            letter.domain = identity.domain
            letter.activityId = identity.activityId
            return letter
        }
    }
}
