import Foundation
import LivelineCodecs
import LivelineCore

/// A small JSON Schema (draft 2020-12) checker for the keywords Liveline's schemas
/// use: `$ref` (to `#/$defs/…` or a sibling file), `allOf`, `anyOf`, `type`, `required`,
/// `properties`, `additionalProperties` (false or a schema), `propertyNames`, `enum`, `const`, `minLength`,
/// `pattern`, `items`, `minItems`, `maxItems`, `minimum`. Annotations (`format`,
/// `description`, `title`) are ignored. Enough for a structural check in tests.
struct SchemaValidator {
    let directory: URL

    func load(_ file: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: directory.appendingPathComponent(file)))
    }

    /// Returns the violations, each as `path: problem`.
    func validate(_ instance: JSONValue, schemaFile: String) throws -> [String] {
        var errors: [String] = []
        try check(instance, against: load(schemaFile), file: schemaFile, path: "$", errors: &errors)
        return errors
    }

    private func check(_ instance: JSONValue, against schema: JSONValue, file: String, path: String, errors: inout [String]) throws {
        guard case .object(let schema) = schema else { return }
        if case .string(let ref) = schema["$ref"] {
            let (refFile, pointer) = ref.hasPrefix("#") ? (file, String(ref.dropFirst())) : (ref, "")
            var target: JSONValue = try load(refFile)
            for component in pointer.split(separator: "/") { target = target[String(component)] ?? .object([:]) }
            try check(instance, against: target, file: refFile, path: path, errors: &errors)
        }
        if case .array(let all) = schema["allOf"] {
            for sub in all { try check(instance, against: sub, file: file, path: path, errors: &errors) }
        }
        if case .array(let options) = schema["anyOf"] {
            var failures: [String] = []
            for option in options {
                var optionErrors: [String] = []
                try check(instance, against: option, file: file, path: path, errors: &optionErrors)
                if optionErrors.isEmpty { failures = []; break }
                failures += optionErrors
            }
            if !failures.isEmpty { errors.append("\(path): matches none of anyOf (\(failures.joined(separator: "; ")))") }
        }
        if let type = schema["type"] {
            let allowed: [String] = switch type {
            case .string(let one): [one]
            case .array(let many): many.compactMap(\.stringValue)
            default: []
            }
            if !allowed.contains(where: { Self.matches(instance, type: $0) }) {
                errors.append("\(path): expected \(allowed.joined(separator: "|")), found \(instance.typeName)")
                return
            }
        }
        if let constant = schema["const"], !Self.equal(instance, constant) {
            errors.append("\(path): must be \(constant)")
        }
        if case .array(let options) = schema["enum"], !options.contains(where: { Self.equal(instance, $0) }) {
            errors.append("\(path): \(instance) is not one of the allowed values")
        }
        if case .string(let text) = instance {
            if let minLength = Self.number(schema["minLength"]), Double(text.count) < minLength {
                errors.append("\(path): shorter than \(minLength)")
            }
            if case .string(let pattern) = schema["pattern"], text.range(of: pattern, options: .regularExpression) == nil {
                errors.append("\(path): does not match \(pattern)")
            }
        }
        if let value = Self.number(instance), let minimum = Self.number(schema["minimum"]), value < minimum {
            errors.append("\(path): below \(minimum)")
        }
        if case .array(let items) = instance {
            if let minItems = Self.number(schema["minItems"]), Double(items.count) < minItems { errors.append("\(path): too few items") }
            if let maxItems = Self.number(schema["maxItems"]), Double(items.count) > maxItems { errors.append("\(path): too many items") }
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() {
                    try check(item, against: itemSchema, file: file, path: "\(path)[\(index)]", errors: &errors)
                }
            }
        }
        if case .object(let members) = instance {
            if case .array(let required) = schema["required"] {
                for key in required.compactMap(\.stringValue) where members[key] == nil {
                    errors.append("\(path).\(key): required")
                }
            }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                if let names = schema["propertyNames"] {
                    try check(.string(key), against: names, file: file, path: "\(path).\(key) (name)", errors: &errors)
                }
                if let propertySchema = properties[key] {
                    try check(value, against: propertySchema, file: file, path: "\(path).\(key)", errors: &errors)
                } else if schema["additionalProperties"] == .bool(false) {
                    errors.append("\(path).\(key): not allowed")
                } else if let additional = schema["additionalProperties"], case .object = additional {
                    try check(value, against: additional, file: file, path: "\(path).\(key)", errors: &errors)
                }
            }
        }
    }

    private static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
             ("number", .integer), ("number", .double), ("integer", .integer):
            true
        case ("integer", .double(let number)):
            number.rounded() == number
        default:
            false
        }
    }

    private static func equal(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        if let left = number(lhs), let right = number(rhs) { return left == right }
        return lhs == rhs
    }
}
