import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineServicesTests/ReplayDecisionTests.swift

/// The `basic` content properties of a message.
public struct AMQPProperties: Sendable, Hashable {
    public var contentType: String?
    public var contentEncoding: String?
    public var headers: AMQPTable
    /// Delivery mode 2: the broker writes the message to disk. Liveline's default.
    public var persistent: Bool
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    /// Per-message TTL in milliseconds, as the decimal string AMQP wants.
    public var expiration: String?
    public var messageID: String?
    public var timestamp: Date?
    public var type: String?
    public var userID: String?
    public var appID: String?

    public init(
        contentType: String? = nil,
        contentEncoding: String? = nil,
        headers: AMQPTable = [:],
        persistent: Bool = true,
        priority: UInt8? = nil,
        correlationID: String? = nil,
        replyTo: String? = nil,
        expiration: String? = nil,
        messageID: String? = nil,
        timestamp: Date? = nil,
        type: String? = nil,
        userID: String? = nil,
        appID: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.persistent = persistent
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.userID = userID
        self.appID = appID
    }
}

/// A message to publish.
public struct AMQPMessage: Sendable {
    public var exchange: String
    public var routingKey: String
    public var body: Data
    public var properties: AMQPProperties
    /// When true (the default), a message that matches no queue fails its publish with
    /// ``AMQPError/Code/unroutable`` instead of vanishing.
    public var mandatory: Bool

    /// The header a publish carries (`true`) when it goes out again after the connection it
    /// was first sent on was lost unconfirmed: the broker may hold the first copy too, and
    /// a consumer that keeps order can tell the copy may come after newer messages. An
    /// application that publishes something again on its own (the translator, for an event
    /// redelivered to it) sets it too.
    public static let resentHeader = "x-liveline-resent"

    public init(
        exchange: String,
        routingKey: String,
        body: Data,
        properties: AMQPProperties = AMQPProperties(),
        mandatory: Bool = true
    ) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.body = body
        self.properties = properties
        self.mandatory = mandatory
    }
}

/// One entry of a message's `x-death` header: a time the broker dead-lettered it.
public struct AMQPDeath: Sendable, Hashable {
    /// `rejected`, `expired`, `maxlen` or `delivery_limit`.
    public var reason: String
    public var queue: String
    public var exchange: String
    public var routingKeys: [String]
    public var count: Int64
    public var time: Date?

    /// Reads the `x-death` history from message headers, newest first as the broker keeps it.
    public static func history(from headers: AMQPTable) -> [AMQPDeath] {
        guard let entries = headers["x-death"]?.arrayValue else { return [] }
        return entries.compactMap { entry in
            guard let table = entry.tableValue else { return nil }
            return AMQPDeath(
                reason: table["reason"]?.stringValue ?? "",
                queue: table["queue"]?.stringValue ?? "",
                exchange: table["exchange"]?.stringValue ?? "",
                routingKeys: table["routing-keys"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                count: table["count"]?.intValue ?? 0,
                time: table["time"]?.dateValue
            )
        }
    }
}
