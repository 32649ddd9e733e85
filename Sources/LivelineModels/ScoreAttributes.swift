import Foundation

// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

/// The static data of a live game-score Live Activity: which game, between whom.
///
/// Adopt it in the iOS app with:
///
/// ```swift
/// import ActivityKit
/// import LivelineModels
///
/// extension ScoreAttributes: ActivityAttributes {}
/// ```
public struct ScoreAttributes: Codable, Hashable, Sendable {
    /// The producer's id of the game; also suits as the broadcast channel's key.
    public var gameId: String
    /// The league or competition, e.g. "Premier League".
    public var league: String
    /// The home team.
    public var homeTeam: Team
    /// The away team.
    public var awayTeam: Team

    /// Creates score attributes.
    public init(gameId: String, league: String, homeTeam: Team, awayTeam: Team) {
        self.gameId = gameId
        self.league = league
        self.homeTeam = homeTeam
        self.awayTeam = awayTeam
    }

    /// A team as it is displayed.
    public struct Team: Codable, Hashable, Sendable {
        /// Full name, e.g. "Arsenal".
        public var name: String
        /// Short name for the compact presentation, e.g. "ARS".
        public var abbreviation: String

        /// Creates a team.
        public init(name: String, abbreviation: String) {
            self.name = name
            self.abbreviation = abbreviation
        }
    }
}
