import Crypto
import Foundation
import LivelineCodecs

/// Deterministic identifiers for push jobs, so a redelivered event produces the same
/// job ids and `apns-id`s, and duplicates are recognisable end to end.
public enum JobIdentity {
    /// The UUID namespace of Liveline job ids (a fixed random UUID).
    /// `6f1c2a57-9d0e-4b7a-8a51-2f3c9e4d7b10`, written as bytes so no parse can fail.
    public static let namespace = UUID(uuid: (
        0x6F, 0x1C, 0x2A, 0x57, 0x9D, 0x0E, 0x4B, 0x7A, 0x8A, 0x51, 0x2F, 0x3C, 0x9E, 0x4D, 0x7B, 0x10
    ))

    /// The job id: 40 hex characters, SHA-1 of the event id and the target. Hashed
    /// because the target holds a whole device token, which must not be logged.
    public static func jobId(eventId: String, target: PushTarget) -> String {
        // SHA-1 derives identifiers here, never secures anything, so its weakness does not matter.
        var sha1 = Insecure.SHA1()
        for part in ["liveline.job\u{0}", eventId, "\u{0}", target.identityText] { sha1.update(utf8Of: part) }
        return sha1.finalize().withUnsafeBytes { Hex.encode($0) }
    }

    /// The `apns-id`: a version 5 (SHA-1, name-based) UUID of the job id in
    /// ``namespace``, as RFC 4122 §4.3 defines.
    public static func apnsId(jobId: String) -> UUID {
        nameBasedUUID(namespace: namespace, name: jobId)
    }

    /// RFC 4122 version 5 UUID.
    public static func nameBasedUUID(namespace: UUID, name: String) -> UUID {
        var sha1 = Insecure.SHA1()
        withUnsafeBytes(of: namespace.uuid) { sha1.update(bufferPointer: $0) }
        sha1.update(utf8Of: name)
        var bytes = Array(sha1.finalize())
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
        ))
    }
}

extension Insecure.SHA1 {
    /// Hashes the string's UTF-8 in place: the arrays and joined strings this replaced cost
    /// more than the hash of a job id.
    mutating func update(utf8Of text: String) {
        var text = text
        text.withUTF8 { update(bufferPointer: UnsafeRawBufferPointer($0)) }
    }
}
