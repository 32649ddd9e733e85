import Crypto
import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift, Tests/LivelineCoreTests/PushJobTests.swift

/// Deterministic identifiers for push jobs, so a redelivered event produces the same
/// job ids and `apns-id`s, and duplicates are recognisable end to end.
public enum JobIdentity {
    /// The UUID namespace of Liveline job ids (a fixed random UUID).
    /// `6f1c2a57-9d0e-4b7a-8a51-2f3c9e4d7b10`, written as bytes so no parse can fail.
    public static let namespace = UUID(uuid: (
        0x6F, 0x1C, 0x2A, 0x57, 0x9D, 0x0E, 0x4B, 0x7A, 0x8A, 0x51, 0x2F, 0x3C, 0x9E, 0x4D, 0x7B, 0x10
    ))

    /// The job id: 40 hex characters, SHA-1 of the event id and the target (its kind and
    /// lowercased token, or its channel). Hashed because the target holds a whole device
    /// token, which must not be logged. A token lives in one environment, so the environment
    /// is not part of it.
    public static func jobId(eventId: String, target: PushTarget) -> String {
        // SHA-1 derives identifiers here, never secures anything, so its weakness does not matter.
        var sha1 = Insecure.SHA1()
        switch target {
        case .device(let token, let kind, _):
            sha1.update(utf8Of: "liveline.job\u{0}", eventId, "\u{0}device:", kind.rawValue, ":", DeviceToken.lowercased(token))
        case .channel(let key):
            sha1.update(utf8Of: "liveline.job\u{0}", eventId, "\u{0}channel:", key)
        }
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
        // The digest's first 16 bytes copied as they are: reading them as a sequence into an
        // array went through the generic iterator, byte by byte.
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        sha1.finalize().withUnsafeBytes { digest in
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: digest.prefix(16))) }
        }
        uuid.6 = (uuid.6 & 0x0F) | 0x50
        uuid.8 = (uuid.8 & 0x3F) | 0x80
        return UUID(uuid: uuid)
    }
}

extension Insecure.SHA1 {
    /// Hashes the string's UTF-8 in place: the arrays and joined strings this replaced cost
    /// more than the hash of a job id.
    mutating func update(utf8Of text: String) {
        var text = text
        text.withUTF8 { update(bufferPointer: UnsafeRawBufferPointer($0)) }
    }

    /// Hashes the pieces' UTF-8 as one message, gathered on the stack and fed in one `update`:
    /// each `update` costs about as much as copying a job id's pieces, and a job id has six.
    mutating func update(utf8Of pieces: String...) {
        let length = pieces.reduce(0) { $0 + $1.utf8.count }
        guard length <= 512 else {
            for piece in pieces { update(utf8Of: piece) }
            return
        }
        withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { buffer in
            var offset = 0
            for var piece in pieces {
                piece.withUTF8 { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]).copyMemory(from: UnsafeRawBufferPointer(bytes))
                    offset += bytes.count
                }
            }
            update(bufferPointer: UnsafeRawBufferPointer(buffer))
        }
    }
}
