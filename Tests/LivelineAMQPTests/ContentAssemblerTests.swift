import Foundation
import Testing

@testable import LivelineAMQP

/// Messages put back together from synthetic method, header and body frames.
@Suite struct ContentAssemblerTests {
    let deliver = ContentAssembler.Kind.delivery(
        consumer: 7, tag: 42, redelivered: true, exchange: "liveline.events", routingKey: "ride.status")
    let properties = AMQPProperties(contentType: "application/json", messageID: "m-1")

    func body(_ assembler: inout ContentAssembler, channel: UInt16, _ text: String) -> ContentAssembler.Content? {
        Array(text.utf8).withUnsafeBytes { assembler.body(channel: channel, $0) }
    }

    @Test func aBodySplitOverFramesIsCompleteWithItsLastFrame() {
        var assembler = ContentAssembler()
        assembler.begin(deliver, channel: 3)
        #expect(assembler.header(channel: 3, properties: properties, bodySize: 11) == nil)
        #expect(body(&assembler, channel: 3, "hello ") == nil)
        let content = body(&assembler, channel: 3, "world")
        #expect(content?.body == Data("hello world".utf8))
        #expect(content?.properties == properties)
        #expect(content?.channel == 3)
        guard case .delivery(let consumer, let tag, let redelivered, let exchange, let routingKey)? = content?.kind else {
            Issue.record("not a delivery: \(String(describing: content))")
            return
        }
        #expect(consumer == 7 && tag == 42 && redelivered && exchange == "liveline.events" && routingKey == "ride.status")
        #expect(assembler.isEmpty)
    }

    @Test func anEmptyBodyIsCompleteWithItsHeader() {
        var assembler = ContentAssembler()
        assembler.begin(.returned(AMQPError(.unroutable, "no queue is bound")), channel: 1)
        let content = assembler.header(channel: 1, properties: properties, bodySize: 0)
        #expect(content?.body == Data())
        guard case .returned(let error)? = content?.kind else {
            Issue.record("not a return: \(String(describing: content))")
            return
        }
        #expect(error.code == .unroutable)
    }

    @Test func channelsInterleaveWithoutMixingBodies() {
        var assembler = ContentAssembler()
        assembler.begin(deliver, channel: 3)
        assembler.begin(deliver, channel: 4)
        _ = assembler.header(channel: 3, properties: properties, bodySize: 2)
        _ = assembler.header(channel: 4, properties: nil, bodySize: 2)
        #expect(body(&assembler, channel: 4, "b") == nil)
        #expect(body(&assembler, channel: 3, "a") == nil)
        #expect(body(&assembler, channel: 3, "A")?.body == Data("aA".utf8))
        let four = body(&assembler, channel: 4, "B")
        #expect(four?.body == Data("bB".utf8))
        #expect(four?.properties == nil)
    }

    @Test func framesWithoutAMethodAreIgnored() {
        var assembler = ContentAssembler()
        #expect(assembler.header(channel: 5, properties: properties, bodySize: 0) == nil)
        #expect(body(&assembler, channel: 5, "stray") == nil)
        #expect(assembler.isEmpty)
    }

    @Test func resetForgetsHalfReadMessages() {
        var assembler = ContentAssembler()
        assembler.begin(deliver, channel: 3)
        _ = assembler.header(channel: 3, properties: properties, bodySize: 10)
        assembler.reset()
        #expect(assembler.isEmpty)
        #expect(body(&assembler, channel: 3, "0123456789") == nil, "the rest of a lost message starts nothing")
    }
}
