import Foundation
import Hummingbird
import LivelineLogging
import Prometheus

// Tests: Tests/LivelineAPITests/AuthenticationTests.swift

/// `/healthz`, `/readyz` and `/metrics`, open to the cluster without a token.
enum OperationalRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .get, path: "/healthz", handler: .open(health)),
        APIRoute(method: .get, path: "/readyz", handler: .open(ready)),
        APIRoute(method: .get, path: "/metrics", handler: .open(metrics)),
    ]

    /// The process answers: that is all liveness means here (not "the database is up").
    @Sendable static func health(_ services: APIServices, _ request: Request, context: APIRequestContext) async throws -> Response {
        JSONResponse.make(data: Data(#"{"status":"ok"}"#.utf8))
    }

    /// Ready when the store answers a read: the api can do nothing without it.
    @Sendable static func ready(_ services: APIServices, _ request: Request, context: APIRequestContext) async throws -> Response {
        do {
            _ = try await services.store.activity(id: "liveline.readyz")
            return JSONResponse.make(data: Data(#"{"status":"ready"}"#.utf8))
        } catch {
            context.logger.error("store unreachable; not ready", metadata: APILogKey.metadata([.error: "\(error)"]))
            return JSONResponse.make(
                data: Data(#"{"status":"not ready","store":"unreachable"}"#.utf8), status: .serviceUnavailable)
        }
    }

    @Sendable static func metrics(_ services: APIServices, _ request: Request, context: APIRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: services.registry.emitToBuffer())))
    }
}
