// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/SimulatorWireTests.swift

/// What the stream handler must write back (or do) for one request.
struct SimulatorReply: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8]? = nil
    /// Extra delay before answering.
    var delayMilliseconds: Int = 0
    /// Close the connection instead of answering.
    var resetConnection = false
    /// The request carried a valid provider token (used to raise MAX_CONCURRENT_STREAMS like APNs).
    var authenticated = false

    static func error(_ status: Int, _ reason: String, id: (String, String)? = nil) -> SimulatorReply {
        var reply = SimulatorReply(status: status)
        if let id { reply.headers.append(id) }
        reply.headers.append(("content-type", "application/json"))
        reply.body = Array(#"{"reason":"\#(reason)"}"#.utf8)
        return reply
    }

    static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> SimulatorReply {
        var reply = SimulatorReply(status: status, headers: headers)
        reply.headers.append(("content-type", "application/json"))
        reply.body = Array(text.utf8)
        return reply
    }
}
