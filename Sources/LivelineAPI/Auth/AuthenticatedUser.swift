// Tests: none needed (declarations only)

/// The user a verified bearer token names.
public struct AuthenticatedUser: Sendable, Hashable {
    /// The token's `sub`, the user id the store keys tokens and activities by.
    public let id: String
}
