import Foundation
import LivelineStore

/// A throwaway SQLite file per test.
public enum SQLiteTestDatabase {
    public static func withStore<T: Sendable>(_ body: (SQLiteLivelineStore) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("store.sqlite").path))
        return try await body(store)
    }

    /// A path in a fresh directory, for tests that open the file twice.
    public static func withPath<T: Sendable>(_ body: (String) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory.appendingPathComponent("store.sqlite").path)
    }
}
