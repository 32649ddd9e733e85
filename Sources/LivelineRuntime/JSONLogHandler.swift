import Foundation
import Logging
import Synchronization

/// Logs as one JSON object per line, for production log pipelines (`--log-format json` or
/// `LIVELINE_LOG_FORMAT=json`):
///
/// ```json
/// {"ts":"2026-11-23T10:00:00.120Z","level":"error","logger":"liveline.sender","source":"LivelineAPNs",
///  "msg":"APNs connection failed","apns.host":"api.push.apple.com","error":"…"}
/// ```
///
/// Metadata keys stay as they are (dot notation, e.g. `amqp.queue`); values are strings,
/// lists and objects as swift-log gives them. What is logged never holds a secret or a full
/// device token: the code that logs is responsible for that, as for the text format.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private let write: @Sendable (String) -> Void

    /// - Parameter write: where each line goes; standard error by default.
    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: Any] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = Self.json(value)
        }
        if let error = event.error { object["error"] = "\(error)" }
        object["ts"] = Self.timestamp(Date())
        object["level"] = event.level.rawValue
        object["logger"] = label
        object["source"] = event.source
        object["msg"] = event.message.description
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        write(String(decoding: data, as: UTF8.self))
    }

    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// One line to standard error; a single write(2) per line, so lines never interleave.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// How a Liveline process writes its log.
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's default lines, for people.
    case text
    /// ``JSONLogHandler``, for machines.
    case json

    private static let bootstrapped = Mutex(false)

    /// Sets the process's log handler once; later calls change nothing.
    public func bootstrap() {
        let first = Self.bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        guard first, self == .json else { return }
        LoggingSystem.bootstrap { JSONLogHandler(label: $0) }
    }
}
