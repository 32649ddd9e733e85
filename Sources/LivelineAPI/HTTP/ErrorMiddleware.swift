import Hummingbird
import LivelineLogging
import Logging
import NIOCore

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift, Tests/LivelineAPITests/AuthenticationTests.swift

/// Turns every error into the api's JSON error shape, so no framework text or stack trace
/// reaches a client, and stamps each response with the request id.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext

    let maximumBodySize: Int
    let metrics: RequestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let error = apiError(for: error, context: context)
            if let limit = error.limit { metrics.refused(route: context.endpointPath ?? "unmatched", reason: limit) }
            response = try error.response(from: request, context: context)
        }
        response.headers[.requestID] = context.id
        return response
    }

    func apiError(for error: any Error, context: Context) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case is NIOTooManyBytesError:
            return .bodyTooLarge(limit: maximumBodySize)
        case let error as any HTTPResponseError:
            switch error.status {
            case .notFound: return .notFound("no such route")
            case .contentTooLarge: return .bodyTooLarge(limit: maximumBodySize)
            case .methodNotAllowed: return APIError(.methodNotAllowed, code: "method-not-allowed", message: "method not allowed")
            case let status where (400..<500).contains(status.code):
                return APIError(status, code: "bad-request", message: status.reasonPhrase)
            default:
                context.logger.error("request failed", metadata: APILogKey.metadata([.error: "\(String(reflecting: type(of: error)))"]))
                return .internalError
            }
        default:
            // Only the type goes to the log: an error's text may quote a token or a query.
            context.logger.error("request failed", metadata: APILogKey.metadata([.error: "\(String(reflecting: type(of: error)))"]))
            return .internalError
        }
    }
}

extension HTTPFields.Element.Name {
    /// Echoes the request id so a client's report can be matched with the server's log.
    static let requestID = HTTPFields.Element.Name("x-request-id")!
}
