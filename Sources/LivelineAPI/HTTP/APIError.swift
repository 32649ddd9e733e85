import Foundation
import Hummingbird

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift, Tests/LivelineAPITests/LimitTests.swift

/// An error the api answers with `{"error":{"code":"…","message":"…"}}`.
///
/// Codes are stable: apps may branch on them. Messages are for people and never carry
/// tokens, secrets or internals.
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// For a 429: whole seconds until the caller may try again (`Retry-After`).
    public var retryAfter: Int?
    /// The limit that refused the request, counted in `liveline_api_refusals_total{reason}`.
    public var limit: String?
    /// For a refused `POST /v1/events`: what was wrong with each event.
    public var events: [EventReport]?

    public init(
        _ status: HTTPResponse.Status, code: String, message: String, limit: String? = nil, retryAfter: Int? = nil,
        events: [EventReport]? = nil
    ) {
        self.events = events
        self.status = status
        self.code = code
        self.message = message
        self.limit = limit
        self.retryAfter = retryAfter
    }

    public static func unauthorized(_ message: String) -> APIError { APIError(.unauthorized, code: "unauthorized", message: message) }
    public static func forbidden(_ message: String) -> APIError { APIError(.forbidden, code: "forbidden", message: message) }
    public static func notFound(_ message: String) -> APIError { APIError(.notFound, code: "not-found", message: message) }
    public static func conflict(code: String, _ message: String) -> APIError { APIError(.conflict, code: code, message: message) }
    public static func malformedBody(_ message: String) -> APIError { APIError(.badRequest, code: "malformed-body", message: message) }
    public static func invalidParameter(_ message: String) -> APIError { APIError(.badRequest, code: "invalid-parameter", message: message) }
    public static func invalidField(_ message: String) -> APIError { APIError(.unprocessableContent, code: "invalid-field", message: message) }
    /// A well-formed request this deployment does not take (a token of an APNs environment it does not push to).
    public static func unserved(_ message: String) -> APIError { APIError(.badRequest, code: "unserved", message: message) }
    public static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "body-too-large", message: "the request body is larger than \(limit) bytes", limit: "body-size")
    }
    /// 429: the caller, or the app as a whole, is over its request limit.
    public static func rateLimited(_ message: String, limit: String, retryAfter: Int) -> APIError {
        APIError(.tooManyRequests, code: "rate-limited", message: message, limit: limit, retryAfter: retryAfter)
    }
    /// 409: storing this would take the user past a limit on what they keep.
    public static func overLimit(code: String, _ message: String, limit: String) -> APIError {
        APIError(.conflict, code: code, message: message, limit: limit)
    }
    public static let unsupportedMediaType = APIError(
        .unsupportedMediaType, code: "unsupported-media-type", message: "send the body as application/json")
    public static let internalError = APIError(.internalServerError, code: "internal", message: "an internal error occurred")

    struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
        }
        let error: Detail
        let events: [EventReport]?
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Bearer realm="liveline""# }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        let data = try JSONEncoder().encode(Body(error: .init(code: code, message: message), events: events))
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
