// Tests: Tests/LivelineCoreTests/AppKeysTests.swift

/// How the store names what belongs to one app, so that two apps' `r-1` are two activities
/// (and so their users, the topics they follow and their channels).
///
/// The deployment's default app keeps its ids as they are: a store that served one app is
/// already laid out so, and a deployment of one app sees the ids its producers and apps use
/// everywhere, in the trace and the dead letters too. Every other app's ids are `app/id`
/// (`com.example.eats/r-1`). The translator and the api make keys where events and calls come
/// in, and everything after them (the store, the push jobs, the trace, the dead letters) uses
/// the keys alone: each table keeps one key column and its indexes as they were. What goes
/// back to an app or a producer (an activity's status, a follow, an outcome) is the id again.
///
/// A bundle id holds no slash, and the translator refuses a default-app id that begins with
/// one and a slash, so a key tells its app unambiguously.
public struct AppKeys: Sendable, Hashable {
    /// The app whose ids are their own keys.
    public let defaultApp: String

    public init(defaultApp: String) {
        self.defaultApp = defaultApp
    }

    /// The key of `id` in `app`.
    public func key(app: String, id: String) -> String {
        app == defaultApp ? id : app + "/" + id
    }

    /// The app a key belongs to.
    public func app(of key: String) -> String {
        Self.prefix(of: key) ?? defaultApp
    }

    /// The id a key holds, as its app names it: whatever the default app, since its ids never
    /// begin as another app's keys do.
    public static func id(of key: String) -> String {
        guard let app = Self.prefix(of: key) else { return key }
        return String(key.dropFirst(app.count + 1))
    }

    /// The bundle id `text` begins with, followed by a slash: the form of another app's key,
    /// which an id of the default app must not have.
    public static func prefix(of text: String) -> String? {
        guard let slash = text.utf8.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let app = String(text[..<slash])
        return isBundleID(app) ? app : nil
    }

    /// A reverse-DNS bundle id: two or more parts of letters, digits and hyphens joined by
    /// dots, at most 155 bytes (`com.example.rides`).
    public static func isBundleID(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return text.utf8.count <= 155 && parts.count >= 2
            && parts.allSatisfy { part in
                !part.isEmpty
                    && part.allSatisfy { byte in
                        switch byte {
                        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                            true
                        default: false
                        }
                    }
            }
    }
}
