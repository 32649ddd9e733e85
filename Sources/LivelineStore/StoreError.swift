// Tests: Tests/LivelineStoreTests/PostgresStoreConfigurationTests.swift, Tests/LivelineStoreTests/PostgresConnectionLossTests.swift

/// An error from a store, with an opaque code so new cases don't break callers.
public struct StoreError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case migrationFailed
        case newerSchema
        case invalidArgument
        case backend
    }

    private let code: Code
    /// What went wrong, for logs. Never contains tokens or passwords.
    public let message: String

    /// A migration could not be applied.
    public static func migrationFailed(_ message: String) -> StoreError { StoreError(code: .migrationFailed, message: message) }
    /// The database was migrated by a newer Liveline than this one.
    public static func newerSchema(_ message: String) -> StoreError { StoreError(code: .newerSchema, message: message) }
    /// The caller passed something the store cannot hold.
    public static func invalidArgument(_ message: String) -> StoreError { StoreError(code: .invalidArgument, message: message) }
    /// The database failed.
    public static func backend(_ message: String) -> StoreError { StoreError(code: .backend, message: message) }

    public var description: String { "StoreError(\(code)): \(message)" }
}
