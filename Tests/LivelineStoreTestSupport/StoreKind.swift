import Foundation
import LivelineStore
import Testing

/// The store a test runs against, for every test target that needs one: the store's
/// conformance suite, the translator and the sender.
public enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    public var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when a server is given, or in CI where its absence must fail.
    public static var underTest: [StoreKind] {
        if PostgresTestDatabase.isRequested { return allCases }
        print("note: PostgreSQL conformance tests are disabled; run them with `scripts/with-postgres swift test`")
        return [.sqlite]
    }

    /// Runs `body` with a fresh, migrated store that no other test sees.
    public func withStore<T: Sendable>(_ body: (any ActivityStore) async throws -> T) async throws -> T {
        switch self {
        case .sqlite:
            return try await SQLiteTestDatabase.withStore { try await body($0) }
        case .postgres:
            return try await PostgresTestDatabase.withStore { try await body($0) }
        }
    }
}
