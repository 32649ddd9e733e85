import LivelineCore
import LivelineModels

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift, Tests/LivelineAPITests/FollowRouteTests.swift

/// The shapes the api accepts, checked before anything reaches the store.
enum Validation {
    static let maximumIdentifierLength = 128
    static let tokenLengths = 64...200

    /// Ids chosen by domains and apps: 1–128 characters of `A–Z a–z 0–9 . _ ~ : -`.
    static func isIdentifier(_ value: String) -> Bool {
        guard (1...maximumIdentifierLength).contains(value.utf8.count) else { return false }
        return value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: ":"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    /// A Swift type name such as `RideAttributes` or `Rides.RideAttributes`.
    static func isAttributesType(_ value: String) -> Bool {
        guard (1...maximumIdentifierLength).contains(value.utf8.count), let first = value.utf8.first,
            isLetter(first) || first == UInt8(ascii: "_")
        else { return false }
        return value.utf8.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    /// A domain name such as `ride` or `sports-score`.
    static func isDomain(_ value: String) -> Bool {
        guard (1...64).contains(value.utf8.count), let first = value.utf8.first, isLetter(first) else { return false }
        return value.utf8.allSatisfy {
            isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
        }
    }

    /// An APNs token as hex of an even length in 64–200; returns it in lower case.
    static func normalizedToken(_ value: String) -> String? {
        guard tokenLengths.contains(value.utf8.count), value.utf8.count % 2 == 0,
            value.utf8.allSatisfy({ isDigit($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0 | 0x20) })
        else { return nil }
        return value.lowercased()
    }

    /// A token's APNs environment: `production` when absent.
    static func environment(_ value: String?) throws -> APNsEnvironment {
        guard let value else { return .production }
        guard let environment = APNsEnvironment(rawValue: value) else {
            throw APIError.invalidField("'environment' must be production or sandbox")
        }
        return environment
    }

    /// What may appear in logs of a token: enough to match reports, too little to push with.
    /// An iOS version as the app reports it (`UIDevice.current.systemVersion`): `18`, `18.1`, `17.4.1`.
    static func osVersion(_ value: String?) throws -> String? {
        guard let value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count),
            parts.allSatisfy({ (1...3).contains($0.utf8.count) && $0.utf8.allSatisfy(isDigit) })
        else { throw APIError.invalidField("'osVersion' must be an iOS version such as 18.1") }
        return value
    }

    /// A locale as the app reports it, stored as a language tag (`de_AT` becomes `de-AT`).
    static func locale(_ value: String?) throws -> String? {
        guard let value else { return nil }
        guard AlertLanguage.isValid(value) else {
            throw APIError.invalidField("'locale' must be a language tag such as de, de-AT or pt_BR")
        }
        return String(value.map { $0 == "_" ? "-" : $0 })
    }

    /// The content-state version an app declares: a whole number from 1.
    static func contentVersion(_ value: Double?) throws -> Int? {
        guard let value else { return nil }
        guard value.rounded() == value, (1...Double(maximumContentVersion)).contains(value) else {
            throw APIError.invalidField(
                "'contentStateVersion' must be a whole number from 1 to \(maximumContentVersion): the version of the content-state model the app was built with")
        }
        return Int(value)
    }

    static let maximumContentVersion = 1_000_000

    /// A topic is `<kind>:<id>`, for example `team:arsenal`, `league:epl` or `game:g-2026-11-25-ars-che`,
    /// with a kind the deployment knows.
    static func topic(_ value: String, kinds: [String]) throws -> String {
        guard isIdentifier(value), let colon = value.firstIndex(of: ":"),
            colon != value.startIndex, value.index(after: colon) != value.endIndex
        else {
            throw APIError.invalidParameter("a topic is <kind>:<id>, for example team:arsenal")
        }
        let kind = String(value[..<colon])
        guard kinds.contains(kind) else {
            throw APIError.notFound("unknown topic kind '\(kind)'; this deployment knows \(kinds.joined(separator: ", "))")
        }
        return value
    }

    static func redacted(_ token: String) -> String { String(token.prefix(8)) + "…" }

    private static func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
