import Foundation

/// Exchanges, queues and bindings, declared idempotently on every (re)connect and exportable
/// as a RabbitMQ definitions document.
public struct AMQPTopology: Sendable, Hashable {
    public struct Exchange: Sendable, Hashable {
        public enum Kind: String, Sendable { case direct, fanout, topic, headers }
        public var name: String
        public var kind: Kind
        public var durable: Bool
        public var arguments: AMQPTable

        public init(_ name: String, kind: Kind, durable: Bool = true, arguments: AMQPTable = [:]) {
            self.name = name
            self.kind = kind
            self.durable = durable
            self.arguments = arguments
        }
    }

    public struct Queue: Sendable, Hashable {
        public var name: String
        public var durable: Bool
        public var arguments: AMQPTable

        public init(_ name: String, durable: Bool = true, arguments: AMQPTable = [:]) {
            self.name = name
            self.durable = durable
            self.arguments = arguments
        }
    }

    public struct Binding: Sendable, Hashable {
        public var queue: String
        public var exchange: String
        public var routingKey: String

        public init(queue: String, exchange: String, routingKey: String) {
            self.queue = queue
            self.exchange = exchange
            self.routingKey = routingKey
        }
    }

    public var exchanges: [Exchange]
    public var queues: [Queue]
    public var bindings: [Binding]

    public init(exchanges: [Exchange] = [], queues: [Queue] = [], bindings: [Binding] = []) {
        self.exchanges = exchanges
        self.queues = queues
        self.bindings = bindings
    }

    /// The topology as a RabbitMQ definitions document (`rabbitmqctl import_definitions`,
    /// the management API, or the Cluster Operator's definitions import).
    public func definitionsJSON(virtualHost: String = "/") -> Data {
        func plain(_ table: AMQPTable) -> [String: Any] { table.mapValues(\.jsonValue) }
        let document: [String: Any] = [
            "exchanges": exchanges.map {
                [
                    "name": $0.name, "vhost": virtualHost, "type": $0.kind.rawValue, "durable": $0.durable,
                    "auto_delete": false, "internal": false, "arguments": plain($0.arguments),
                ] as [String: Any]
            },
            "queues": queues.map {
                [
                    "name": $0.name, "vhost": virtualHost, "durable": $0.durable, "auto_delete": false,
                    "arguments": plain($0.arguments),
                ] as [String: Any]
            },
            "bindings": bindings.map {
                [
                    "source": $0.exchange, "vhost": virtualHost, "destination": $0.queue,
                    "destination_type": "queue", "routing_key": $0.routingKey, "arguments": [String: Any](),
                ] as [String: Any]
            },
        ]
        // The document is built from strings, numbers and booleans only, so this cannot fail.
        return (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
    }
}

extension AMQPFieldValue {
    var jsonValue: Any {
        switch self {
        case .bool(let value): return value
        case .int(let value): return value
        case .uint(let value): return value
        case .double(let value): return value
        case .decimal(let scale, let value): return Double(value) / pow(10, Double(scale))
        case .string(let value): return value
        case .bytes(let value): return Data(value).base64EncodedString()
        case .timestamp(let value): return value
        case .array(let values): return values.map(\.jsonValue)
        case .table(let table): return table.mapValues(\.jsonValue)
        case .void: return NSNull()
        }
    }
}
