import Foundation
import Hummingbird

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift, Tests/LivelineAPITests/ActivityRouteTests.swift

/// Reads a JSON request body within the api's limits.
struct JSONBody: Sendable {
    let maximumSize: Int

    /// 415 unless the content type is JSON, 413 past the size limit, 400 if it does not decode.
    func decode<Body: Decodable>(_ type: Body.Type, from request: Request) async throws -> Body {
        guard let contentType = request.headers[.contentType].flatMap(MediaType.init(from:)),
            contentType.isType(.applicationJson)
        else { throw APIError.unsupportedMediaType }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumSize {
            throw APIError.bodyTooLarge(limit: maximumSize)
        }
        let buffer = try await request.body.collect(upTo: maximumSize)
        do {
            return try JSONDecoder().decode(Body.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.malformedBody(Self.describe(error))
        } catch {
            throw APIError.malformedBody("the body is not valid JSON")
        }
    }

    /// Names the field at fault without echoing any value the client sent.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "the body" : "'\(path)'"
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.map(\.stringValue) + [key.stringValue]
            return "'\(parent.joined(separator: "."))' is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)) has the wrong type"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "\(path(context)) is not valid"
        @unknown default:
            return "the body does not match the schema"
        }
    }
}

/// A JSON response.
enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = Date.millisecondsStrategy
        return make(data: try encoder.encode(value), status: status)
    }

    static func make(data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
