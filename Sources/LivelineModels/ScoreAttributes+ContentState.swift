import Foundation

// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

extension ScoreAttributes {
    /// The dynamic data of a game-score Live Activity.
    ///
    /// `period` and `clock` are display strings rather than numbers because leagues
    /// count differently ("Q3", "2nd half", "OT", "Top 9th") and the widget only shows
    /// them. `lastPlay` is omitted from the JSON when nil (synthesized `Codable`).
    public struct ContentState: Codable, Hashable, Sendable {
        /// Goals/points of the home team.
        public var homeScore: Int
        /// Goals/points of the away team.
        public var awayScore: Int
        /// The period as displayed, e.g. "Q3" or "2nd half".
        public var period: String
        /// The game clock as displayed, e.g. "12:34".
        public var clock: String
        /// Where the game is.
        public var status: GameStatus
        /// A one-line description of the last notable play, if any.
        public var lastPlay: String?

        /// Creates a score content state.
        public init(
            homeScore: Int,
            awayScore: Int,
            period: String,
            clock: String,
            status: GameStatus,
            lastPlay: String? = nil
        ) {
            self.homeScore = homeScore
            self.awayScore = awayScore
            self.period = period
            self.clock = clock
            self.status = status
            self.lastPlay = lastPlay
        }
    }
}

extension ScoreAttributes.ContentState: VersionedContentState {
    public static let contentStateVersion = 2

    /// Version 1 apps know no intermission (they show halftime), and require `lastPlay`.
    /// In this file for the synthesized `CodingKeys`: a field named here must exist.
    public static let olderContentStates = [
        ContentStateVersion(1, changes: [
            .added(GameStatus.intermission, in: CodingKeys.status, shownAs: .halftime),
            .madeOptional(CodingKeys.lastPlay, default: ""),
        ]),
    ]
}
