// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

/// The steps of a delivery. The raw values are the exact strings in `content-state`.
///
/// The reference has `confirmed … delivered`; Liveline adds `cancelled` so a cancelled
/// order can be shown and ended with its own final state. An app built against the
/// reference enum must add this case too, or it cannot decode the cancel push.
public enum DeliveryStep: String, Codable, Hashable, Sendable, CaseIterable {
    case confirmed
    case preparing
    case pickedUp
    case delivering
    case delivered
    /// Added by Liveline (not in the reference): the order was cancelled.
    case cancelled
}
