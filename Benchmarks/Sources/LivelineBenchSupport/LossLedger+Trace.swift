import LivelineCore

// Tests: Benchmarks/Tests/LivelineBenchSupportTests/LossLedgerTests.swift

extension LossLedger {
    /// The event id and drop reason of a `dropped` trace line, as `liveline why` shows it:
    /// the translator's `event <id>: superseded by <id> in the same batch` or `event <id> at
    /// <time> (<status>): <notes>; <reason>: <message>`, or the sender's (`expired`, or
    /// `superseded` on a retry). Reading the drops from the trace also proves the trace
    /// tells on-call about each one.
    public static func drop(fromTrace detail: String) -> (eventID: String, reason: String)? {
        // The sender's: `job <id> event <id> update to <target>: <reason>: not sent (attempt n)`.
        if detail.hasPrefix("job ") {
            let words = detail.split(separator: " ")
            guard words.count > 3, words[2] == "event", let colon = detail.range(of: ": "),
                let reason = detail[colon.upperBound...].split(separator: ":").first
            else { return nil }
            return (String(words[3]), String(reason))
        }
        let words = detail.split(separator: " ", maxSplits: 2)
        guard words.count == 3, words[0] == "event" else { return nil }
        let id = String(words[1].hasSuffix(":") ? words[1].dropLast() : words[1])
        if words[2].hasPrefix("superseded by ") { return (id, Rule.superseded.rawValue) }
        // The time holds colons too: the notes start after "(<status>): ".
        guard let notes = detail.range(of: "): ").map({ detail[$0.upperBound...] }),
            let last = notes.components(separatedBy: "; ").last,
            let reason = last.split(separator: ":").first.map(String.init),
            DropReason(rawValue: reason) != nil
        else { return nil }
        return (id, reason)
    }

    /// The event id of a sender's `apns-outcome` trace line saying APNs answered that the
    /// device is gone: `job <id> event <id> update to <target>: 410 Unregistered; ...`.
    public static func unregistered(fromTrace detail: String) -> String? {
        let words = detail.split(separator: " ")
        guard words.count > 3, words[0] == "job", words[2] == "event", detail.contains(": 410 Unregistered") else { return nil }
        return String(words[3])
    }
}
