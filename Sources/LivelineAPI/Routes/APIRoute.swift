import Hummingbird

// Tests: Tests/LivelineAPITests/OpenAPIDocumentTests.swift

/// A route as the OpenAPI document names it: method and templated path.
public struct APIRouteDescription: Sendable, Hashable, CustomStringConvertible {
    /// Upper-case HTTP method.
    public let method: String
    /// The path with `{parameter}` placeholders, as in the OpenAPI document.
    public let path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    public var description: String { "\(method) \(path)" }
}

/// One entry of the route table the router is built from, so the routes served and the
/// routes listed (for the OpenAPI check) cannot drift apart.
struct APIRoute: Sendable {
    enum Handler: Sendable {
        case open(@Sendable (APIServices, Request, APIRequestContext) async throws -> Response)
        case authenticated(@Sendable (APIServices, Request, APIRequestContext, AuthenticatedUser) async throws -> Response)
        /// A producer's call, with its key rather than a user's JWT.
        case producer(@Sendable (APIServices, Request, APIRequestContext, ProducerCredential, EventIntake) async throws -> Response)
    }

    let method: HTTPRequest.Method
    let path: String
    let handler: Handler

    var description: APIRouteDescription { APIRouteDescription(method: method.rawValue, path: path) }
}
