import Foundation
import LivelineAPI
import Testing
import Yams

@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// docs/openapi.yaml, found from this file so the test runs from any directory.
    static func documentedRoutes() throws -> Set<APIRouteDescription> {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/openapi.yaml")
        let document = try #require(try Yams.load(yaml: String(contentsOf: url, encoding: .utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        var routes = Set<APIRouteDescription>()
        for (path, item) in paths {
            let operations = try #require(item as? [String: Any])
            for method in operations.keys where methods.contains(method) {
                routes.insert(APIRouteDescription(method: method.uppercased(), path: path))
            }
        }
        return routes
    }

    @Test func everyServedRouteIsDocumentedAndViceVersa() throws {
        let served = Set(apiRouteDescriptions())
        let documented = try Self.documentedRoutes()
        #expect(served.subtracting(documented).isEmpty, "served but not documented")
        #expect(documented.subtracting(served).isEmpty, "documented but not served")
        #expect(served.count == 19)
    }
}
