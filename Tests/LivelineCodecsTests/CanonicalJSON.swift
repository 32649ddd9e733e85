import Foundation
import LivelineCodecs

/// The `JSONEncoder` whose bytes `JSONWriter` and `JSONValueEncoder` must reproduce: the
/// tests' reference for what Liveline sends and stores.
///
/// Only key order and slash escaping differ from `JSONEncoder()`; date and data
/// strategies stay at their defaults because ActivityKit decodes with the defaults
/// (Date = seconds since 2001-01-01, ClosedRange = two-element array).
enum CanonicalJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
