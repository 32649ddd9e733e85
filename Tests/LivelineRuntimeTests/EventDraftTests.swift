import Foundation
import LivelineCore
import LivelineRuntime
import Testing

/// `liveline publish` from flags: any event a domain accepts, checked as the translator
/// checks it before anything is published.
struct EventDraftTests {
    static let translator = Translator(configuration: .standard(bundleId: "com.example.liveline"))
    static let gameState = #"{"homeScore":1,"awayScore":0,"period":"1st half","clock":"23:10","status":"live"}"#
    static let gameAttributes = """
        {"gameId":"g-1","league":"Premier League","homeTeam":{"name":"Arsenal","abbreviation":"ARS"},\
        "awayTeam":{"name":"Chelsea","abbreviation":"CHE"}}
        """

    static func game() -> EventDraft {
        var draft = EventDraft(domain: "score", activity: "g-1", state: gameState)
        draft.time = "2026-11-23T15:00:00.000Z"
        return draft
    }

    @Test func aSharedDomainsStartNeedsNoUserAndNamesItsTopics() throws {
        var draft = Self.game()
        draft.attributes = Self.gameAttributes
        draft.topics = "team:arsenal, team:chelsea,league:premier-league"
        let event = try Self.translator.validateForPublishing(try draft.body())
        #expect(event.domain == "score" && event.activityId == "g-1" && event.userId.isEmpty)
        #expect(event.topics == ["team:arsenal", "team:chelsea", "league:premier-league"])
        #expect(event.envelope.subject == "g-1")
    }

    @Test func overridesAreBuiltFromKeyValuePairs() throws {
        var draft = Self.game()
        draft.overrides = ["priority=10", "relevanceScore=90", "staleDate=+15m", "alert.title=Goal!", "alert.body=Arsenal 1-0"]
        let event = try Self.translator.validateForPublishing(try draft.body())
        let overrides = try #require(event.overrides)
        #expect(overrides.priority == .high)
        #expect(overrides.relevanceScore == 90)
        #expect(overrides.staleDate == RFC3339.parse("2026-11-23T15:15:00.000Z"))
        #expect(overrides.alert?.title == .text("Goal!") && overrides.alert?.body == .text("Arsenal 1-0"))
    }

    /// Out of the domain's bounds: the translator's own words, before anything is published.
    @Test func anOverrideOutOfBoundsGetsTheTranslatorsError() throws {
        var draft = Self.game()
        draft.overrides = ["relevanceScore=500"]
        let error = #expect(throws: EventDraftError.self) { try Self.translator.validateForPublishing(try draft.body()) }
        #expect(error?.description == "the translator would dead-letter the event invalid-override: overrides.relevanceScore 500.0 is outside 0.0...100.0")

        draft.overrides = ["dismissalDate=+1h"]
        let notAnEnd = #expect(throws: EventDraftError.self) { try Self.translator.validateForPublishing(try draft.body()) }
        #expect(notAnEnd?.description.contains("overrides.dismissalDate applies only to an event that ends the activity") == true)
        // The final whistle ends the game, so it takes one.
        draft.state = Self.gameState.replacingOccurrences(of: "\"live\"", with: "\"final\"")
        _ = try Self.translator.validateForPublishing(try draft.body())
    }

    @Test func malformedFlagsSayWhatTheyTake() {
        for (pairs, message) in [
            (["priority"], "--override takes key=value, not priority"),
            (["colour=red"], "--override colour is not an override"),
            (["priority=7"], "--override priority must be 5 or 10, not 7"),
            (["relevanceScore=high"], "--override relevanceScore must be a number, not high"),
            (["staleDate=soon"], "--override staleDate takes an RFC 3339 time or +30m"),
            (["alert.title=Goal!"], "an alert override needs both alert.title and alert.body"),
            (["priority=5", "priority=10"], "--override priority is given twice"),
        ] {
            let error = #expect(throws: EventDraftError.self) {
                _ = try EventDraft.overrides(pairs, eventTime: EventTime(Date()))
            }
            #expect(error?.description.hasPrefix(message) == true, "\(pairs): \(error?.description ?? "no error")")
        }
        var draft = Self.game()
        draft.topics = " , "
        #expect(throws: EventDraftError.self) { try draft.body() }
        draft = Self.game()
        draft.state = "{not json"
        #expect(throws: EventDraftError.self) { try draft.body() }
    }

    @Test func aPersonalDomainsEventWithoutAUserIsRefused() throws {
        let draft = EventDraft(domain: "ride", activity: "r-1", state: #"{"status":"driverAssigned"}"#)
        let error = #expect(throws: EventDraftError.self) { try Self.translator.validateForPublishing(try draft.body()) }
        #expect(error?.description.contains("data.userId") == true)
    }
}
