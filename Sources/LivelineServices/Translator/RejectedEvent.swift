import Foundation
import LivelineCore

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// The dead letter for a message the translator could not parse.
enum RejectedEvent {
    /// Builds the dead letter, with the domain, activity and event id when the bytes
    /// still reveal them, so on-call can filter a bad producer's letters. The activity is
    /// keyed within the app the event names, else its domain's, when the translator knows it.
    static func deadLetter(body: Data, error: EventError, at now: EventTime, translator: Translator) -> DeadLetter {
        var letter = DeadLetter(rejecting: body, error: error, at: now)
        switch error {
        case .notJSON, .tooLarge:
            // Nothing to read, or too much to read again.
            return letter
        default:
            guard let identity = EventIdentity(peeking: body) else { return letter }
            letter.eventId = identity.eventId
            letter.domain = identity.domain
            letter.activityId = identity.activityId.map { id in
                guard let app = identity.bundleId ?? identity.domain.flatMap({ translator.domain(named: $0)?.bundleId }) else { return id }
                return translator.configuration.keys.key(app: app, id: id)
            }
            return letter
        }
    }
}
