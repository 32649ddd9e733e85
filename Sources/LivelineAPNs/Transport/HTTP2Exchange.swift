import LivelineHTTP2
import NIOCore
import NIOHPACK

// Tests: none needed (declarations only)

/// One request as the transport sends it: header block (pseudo-headers included) and body.
struct HTTP2Request: Sendable {
    var headers: HeaderFields
    var body: ByteBuffer?

    init(headers: HeaderFields, body: ByteBuffer?) {
        self.headers = headers
        self.body = body
    }

    /// A request with NIO's header list.
    init(headers: HPACKHeaders, body: ByteBuffer?) {
        self.init(headers: HeaderFields(headers), body: body)
    }
}

/// One complete response.
struct HTTP2Response: Sendable {
    var status: Int
    var headers: HPACKHeaders
    var body: ByteBuffer?
}

/// Why a request got no response.
enum HTTP2TransportFailure: Error, Sendable {
    /// The server cannot have processed the stream (it was above a GOAWAY's last-stream-id, refused,
    /// or never written). Safe to send again on another connection.
    case unprocessed(String)
    /// The stream was in flight when the connection broke; APNs may or may not have taken it.
    case interrupted(String)
}
