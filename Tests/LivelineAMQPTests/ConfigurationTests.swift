import Foundation
import LivelineAMQP
import LivelineMessaging
import LivelineTestSupport
import Testing

@Suite struct ConfigurationTests {
    @Test func parsesAnAMQPSURLWithParameters() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://svc:s%40cret@rabbit.internal/liveline?heartbeat=20&cacertfile=/etc/ca.pem&name=sender")
        #expect(configuration.host == "rabbit.internal")
        #expect(configuration.port == 5671)
        #expect(configuration.virtualHost == "liveline")
        #expect(configuration.username == "svc")
        #expect(configuration.password == "s@cret")
        #expect(configuration.heartbeat == .seconds(20))
        #expect(configuration.confirmTimeout == .seconds(30), "the default")
        #expect(try AMQPConfiguration(url: "amqp://h?confirm_timeout=2.5").confirmTimeout == .milliseconds(2500))
        #expect(configuration.tls?.caFile == "/etc/ca.pem")
        #expect(configuration.tls?.verifyPeer == true)
        #expect(configuration.connectionName == "sender")
        #expect(!configuration.description.contains("cret"))
    }

    @Test func defaultVirtualHostAndPlainPort() throws {
        let configuration = try AMQPConfiguration(url: "amqp://localhost")
        #expect(configuration.virtualHost == "/")
        #expect(configuration.port == 5672)
        #expect(configuration.tls == nil)
        #expect(try AMQPConfiguration(url: "amqp://h/%2f").virtualHost == "/")
    }

    @Test func aClusterIsSeveralBrokersInOneURL() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://svc:a,b%40c@rabbit-0,rabbit-1:5000,10.0.0.3/liveline?heartbeat=5")
        #expect(configuration.brokers == [
            .init(host: "rabbit-0", port: 5671), .init(host: "rabbit-1", port: 5000), .init(host: "10.0.0.3", port: 5671),
        ])
        #expect(configuration.host == "rabbit-0")
        #expect(configuration.username == "svc")
        #expect(configuration.password == "a,b@c", "a comma in the credentials is not a broker")
        #expect(configuration.virtualHost == "liveline")
        #expect(configuration.heartbeat == .seconds(5))
        #expect(configuration.description == "amqps://svc@rabbit-0:5671,rabbit-1:5000,10.0.0.3:5671/liveline")
        #expect(try AMQPConfiguration(url: "amqp://h1:1,h2").brokers.map(\.port) == [1, 5672])
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://h1,,h2/") }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://h1,h2:port/") }
        // A raw '/' in a password would otherwise split it into hosts that logs show.
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:1,x/y@h1/v") }
        #expect(try AMQPConfiguration(url: "amqp://u:1%2Cx%2Fy@h1,h2/v").password == "1,x/y")
        let ipv6 = try AMQPConfiguration(url: "amqp://[::1]:5673,[fe80::2]/")
        #expect(ipv6.brokers == [.init(host: "::1", port: 5673), .init(host: "fe80::2", port: 5672)])
        #expect(ipv6.description == "amqp://guest@[::1]:5673,[fe80::2]:5672/%2F")
    }

    @Test func rejectsOtherSchemesAndBadNumbers() {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "http://localhost") }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://h?heartbeat=soon") }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://h?confirm_timeout=-1") }
    }

    @Test func livelineWorkQueuesAreQuorumWithLimitAndAtLeastOnceDeadLettering() throws {
        let topology = LivelineTopology()
        let definitions = try JSONSerialization.jsonObject(with: topology.amqp.definitionsJSON()) as! [String: Any]
        let queues = definitions["queues"] as! [[String: Any]]
        let byName = Dictionary(uniqueKeysWithValues: queues.map { ($0["name"] as! String, $0) })
        for name in [topology.translateQueues[0], topology.sendQueues[0]] {
            let arguments = try #require(byName[name]?["arguments"] as? [String: Any])
            #expect(arguments["x-single-active-consumer"] as? Bool == true)
            #expect(arguments["x-queue-type"] as? String == "quorum")
            #expect(arguments["x-delivery-limit"] as? Int == 10)
            #expect(arguments["x-dead-letter-exchange"] as? String == topology.deadExchange)
            #expect(arguments["x-dead-letter-strategy"] as? String == "at-least-once")
            #expect(arguments["x-overflow"] as? String == "reject-publish")
        }
        let dead = try #require(byName[topology.deadQueue]?["arguments"] as? [String: Any])
        #expect(dead["x-dead-letter-exchange"] == nil, "the DLQ is the end of the line")
        for tier in topology.retryTiers {
            let arguments = try #require(byName[topology.retryQueue(tier)]?["arguments"] as? [String: Any])
            #expect(arguments["x-message-ttl"] as? Int == Int(tier.delay.components.seconds) * 1000)
            #expect(arguments["x-dead-letter-exchange"] as? String == topology.pushExchange)
        }
        // Every binding joins things that are declared.
        let exchanges = Set((definitions["exchanges"] as! [[String: Any]]).map { $0["name"] as! String })
        for binding in definitions["bindings"] as! [[String: Any]] {
            #expect(exchanges.contains(binding["source"] as! String))
            let destination = binding["destination"] as! String
            #expect(binding["destination_type"] as? String == "exchange" ? exchanges.contains(destination) : byName[destination] != nil)
        }
    }
}

@Suite struct DeployDefinitionsTests {
    /// deploy/rabbitmq/definitions.json is what docker-compose and the cluster import; it must
    /// be exactly what `liveline topology` prints, or the broker and the workers disagree.
    @Test func committedDefinitionsMatchTheCode() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let committed = try Data(contentsOf: root.appendingPathComponent("deploy/rabbitmq/definitions.json"))
        // The shard counts the compose file and the manifests give the workers.
        let generated = LivelineTopology(translateShards: 8, sendShards: 8).amqp.definitionsJSON()
        #expect(
            String(decoding: committed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == String(decoding: generated, as: UTF8.self),
            "regenerate with: swift run liveline topology --translate-shards 8 --send-shards 8 > deploy/rabbitmq/definitions.json")
    }
}
