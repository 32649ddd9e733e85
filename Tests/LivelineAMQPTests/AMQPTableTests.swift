import CRabbitMQ
import Testing

@testable import LivelineAMQP

/// ``AMQPTable`` keeps its entries as a list; these check it still behaves as the map AMQP
/// defines, and that a table survives the trip through librabbitmq's C form.
@Suite struct AMQPTableTests {
    @Test func aNameGivenTwiceKeepsItsLastValue() {
        let table: AMQPTable = ["x-a": 1, "x-b": "two", "x-a": 3]
        #expect(table.count == 2)
        #expect(table["x-a"] == 3)
        #expect(table.keys == ["x-a", "x-b"])
    }

    @Test func settingReplacesAddsAndRemoves() {
        var table: AMQPTable = ["x-attempt": 1]
        table["x-attempt"] = 2
        table["x-first-attempt-at"] = .int(1_700_000_000_000)
        #expect(table["x-attempt"] == 2)
        #expect(table.count == 2)
        table["x-attempt"] = nil
        table["x-absent"] = nil
        #expect(table["x-attempt"] == nil)
        #expect(table.keys == ["x-first-attempt-at"])
        // Names of the same length are told apart by their bytes.
        table["x-liveline-activity"] = "r-1"
        table["x-liveline-sequence"] = 7
        #expect(table["x-liveline-activity"] == "r-1")
        #expect(table["x-liveline-sequence"] == 7)
        #expect(table["x-liveline-sequencf"] == nil)
    }

    @Test func equalityAndHashIgnoreOrder() {
        let one: AMQPTable = ["x-a": 1, "x-b": "two", "x-c": .table(["count": 1])]
        let other: AMQPTable = ["x-c": .table(["count": 1]), "x-a": 1, "x-b": "two"]
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(Set([one, other]).count == 1)
        #expect(one != ["x-a": 1, "x-b": "two", "x-c": .table(["count": 2])])
        #expect(one != ["x-a": 1, "x-b": "two"])
        #expect(one != ["x-a": 1, "x-b": "two", "x-d": .table(["count": 1])])
    }

    @Test func mergingAndMappingValues() {
        let death: AMQPTable = ["count": 1, "queue": "liveline.send"]
        let bumped = death.merging(["count": 2, "reason": "rejected"]) { $1 }
        #expect(bumped == ["count": 2, "queue": "liveline.send", "reason": "rejected"])
        let kept = death.merging(["count": 2]) { first, _ in first }
        #expect(kept["count"] == 1)
        #expect(death.mapValues(\.intValue) == ["count": 1, "queue": nil])
    }

    @Test func aTableSurvivesItsCForm() {
        let table: AMQPTable = [
            "x-liveline-attempt": 2, "x-liveline-lane": "r-1/update/ab12", "x-flag": true,
            "x-death": .array([.table(["count": 1, "reason": "rejected", "routing-keys": .array(["k"])])]),
        ]
        var names = StringInterner()
        let read = withAMQPTable(table) { c in AMQPTable(c: c, names: &names) }
        #expect(read == table)
        #expect(read.keys == table.keys)
        #expect(withAMQPTable([:]) { $0.num_entries } == 0)
    }
}
