import Foundation

// Tests: Tests/LivelineCoreTests/PushJobTests.swift

/// Several push jobs in one message on `liveline.push`: each job's documented JSON (see
/// ``PushJob``) on a line of its own, "JSON Lines", with content type ``contentType``.
///
/// A game's start for 100,000 followers is 100,000 jobs of one event. One message each
/// cost the broker 70-94 µs of CPU per start (publish, confirm, deliver, ack), more than
/// the translator's and the simulator's share, and kept the start over 10 s on two cores.
/// The translator bundles the jobs of one event (each for another target, so another lane)
/// up to the translator's `jobsPerMessage`; the sender reads them back one by one
/// and acks the message when every job in it is settled. Retries and dead letters always
/// carry one job, so every later step sees single jobs.
///
/// A job's JSON has no raw newline (``PushJob/encoded()`` escapes control characters in
/// strings), so a line is always exactly one job.
public enum PushJobBundle {
    /// The content type that tells a bundle from a single job.
    public static let contentType = "application/x-ndjson"

    /// The jobs, one line each.
    public static func encode(_ jobs: some Collection<PushJob>) -> Data {
        var body = Data()
        body.reserveCapacity(jobs.count * 900)
        for job in jobs {
            body.append(job.encoded())
            body.append(UInt8(ascii: "\n"))
        }
        return body
    }

    /// The lines of `body`, each (it is hoped) one job's JSON; blank lines are skipped.
    /// Found with `memchr`: `Data.split` cost the sender a third of its CPU in a game's start.
    public static func lines(of body: Data) -> [Data] {
        body.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> [Data] in
            guard let base = bytes.baseAddress else { return [] }
            var lines: [Data] = []
            var start = 0
            while start < bytes.count {
                let end = memchr(base + start, 0x0A, bytes.count - start).map { base.distance(to: UnsafeRawPointer($0)) } ?? bytes.count
                let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                if line.contains(where: { !isSpace($0) }) { lines.append(Data(line)) }
                start = end + 1
            }
            return lines
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D
    }
}
