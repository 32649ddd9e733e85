import Foundation

// Tests: Tests/LivelineAMQPTests/ConfigurationTests.swift, Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

/// Exchanges, queues and bindings, declared idempotently on every (re)connect and exportable
/// as a RabbitMQ definitions document.
public struct AMQPTopology: Sendable, Hashable {
    public struct Exchange: Sendable, Hashable {
        public enum Kind: String, Sendable {
            case direct, fanout, topic, headers
            /// The consistent-hash exchange (plugin `rabbitmq_consistent_hash_exchange`): each
            /// message goes to one bound queue, chosen by a hash of its routing key or of the
            /// header named in the `hash-header` argument; binding keys are weights.
            case consistentHash = "x-consistent-hash"
        }
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

    /// An exchange bound to another: what reaches `source` with a matching key also goes
    /// through `destination`.
    public struct ExchangeBinding: Sendable, Hashable {
        public var destination: String
        public var source: String
        public var routingKey: String

        public init(destination: String, source: String, routingKey: String) {
            self.destination = destination
            self.source = source
            self.routingKey = routingKey
        }
    }

    public var exchanges: [Exchange]
    public var queues: [Queue]
    public var bindings: [Binding]
    public var exchangeBindings: [ExchangeBinding]

    public init(
        exchanges: [Exchange] = [], queues: [Queue] = [], bindings: [Binding] = [], exchangeBindings: [ExchangeBinding] = []
    ) {
        self.exchanges = exchanges
        self.queues = queues
        self.bindings = bindings
        self.exchangeBindings = exchangeBindings
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
            } + exchangeBindings.map {
                [
                    "source": $0.source, "vhost": virtualHost, "destination": $0.destination,
                    "destination_type": "exchange", "routing_key": $0.routingKey, "arguments": [String: Any](),
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
