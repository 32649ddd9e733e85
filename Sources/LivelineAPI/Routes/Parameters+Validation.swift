import Hummingbird

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

extension APIRequestContext {
    /// A path parameter that must satisfy `isValid`, or 400 `invalid-parameter`.
    func parameter(_ name: String, where isValid: (String) -> Bool) throws -> String {
        guard let value = parameters.get(name), isValid(value) else {
            throw APIError.invalidParameter("'\(name)' is not a valid value")
        }
        return value
    }
}
