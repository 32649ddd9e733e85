import Foundation
import Hummingbird
import Prometheus

/// `/healthz` and `/metrics`, open to the cluster without a token.
enum OperationalRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .get, path: "/healthz", handler: .open(health)),
        APIRoute(method: .get, path: "/metrics", handler: .open(metrics)),
    ]

    /// The process answers: that is all liveness means here (not "the database is up").
    @Sendable static func health(_ services: APIServices, _ request: Request, context: APIRequestContext) async throws -> Response {
        JSONResponse.make(data: Data(#"{"status":"ok"}"#.utf8))
    }

    @Sendable static func metrics(_ services: APIServices, _ request: Request, context: APIRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: services.registry.emitToBuffer())))
    }
}
