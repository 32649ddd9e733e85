import CRabbitMQ
import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPTableTests.swift, Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

// Scoped C views of Swift values, for the publish path.
//
// rabbitmq-c borrows every `amqp_bytes_t` for the length of one call, so a publish needs its
// strings only inside a closure: `String.withUTF8` lends the string's own bytes (a native
// string is contiguous UTF-8; a small one is copied to the stack), and tables and arrays use
// `withUnsafeTemporaryAllocation`, which stays on the stack at these sizes. No heap block per
// string, nothing to free afterwards. Declarations and login, which are rare, still use
// ``CArena``.

/// Calls `body` with the UTF-8 bytes of `string`, valid only inside it.
@inline(__always)
func withAMQPBytes<Result>(of string: String, _ body: (amqp_bytes_t) -> Result) -> Result {
    // Borrowed in place: every native string is contiguous, so the copy `withUTF8` (a
    // mutating method) would need is only the fallback.
    if let result = string.utf8.withContiguousStorageIfAvailable({ utf8 in
        body(amqp_bytes_t(len: utf8.count, bytes: UnsafeMutableRawPointer(mutating: utf8.baseAddress)))
    }) {
        return result
    }
    var string = string
    return string.withUTF8 { utf8 in
        body(amqp_bytes_t(len: utf8.count, bytes: UnsafeMutableRawPointer(mutating: utf8.baseAddress)))
    }
}

/// Calls `body` with the UTF-8 bytes of `string`, or nil, valid only inside it.
@inline(__always)
func withAMQPBytes<Result>(of string: String?, _ body: (amqp_bytes_t?) -> Result) -> Result {
    guard let string else { return body(nil) }
    return withAMQPBytes(of: string) { (bytes: amqp_bytes_t) -> Result in body(bytes) }
}

/// Calls `body` with `table` as a C table whose keys and values live only inside it.
func withAMQPTable<Result>(_ table: AMQPTable, _ body: (amqp_table_t) -> Result) -> Result {
    guard !table.isEmpty else { return body(amqp_empty_table) }
    return withUnsafeTemporaryAllocation(of: amqp_table_entry_t.self, capacity: table.count) { entries in
        withEntries(of: table.entries, at: 0, into: entries) {
            body(amqp_table_t(num_entries: Int32(table.count), entries: entries.baseAddress))
        }
    }
}

/// Fills `entries` from `position` on, each entry inside the scope of its key's and value's
/// bytes, then calls `body` with all of them alive.
private func withEntries<Result>(
    of table: [AMQPTable.Element], at position: Int,
    into entries: UnsafeMutableBufferPointer<amqp_table_entry_t>, _ body: () -> Result
) -> Result {
    guard position < table.count else { return body() }
    let (key, value) = table[position]
    return withAMQPBytes(of: key) { (keyBytes: amqp_bytes_t) -> Result in
        withAMQPFieldValue(value) { field in
            entries.baseAddress!.advanced(by: position).initialize(to: amqp_table_entry_t(key: keyBytes, value: field))
            return withEntries(of: table, at: position + 1, into: entries, body)
        }
    }
}

extension amqp_field_value_t {
    /// The C form of a value that holds no memory of its own (numbers, booleans, timestamps,
    /// void), whoever writes it; `nil` for strings, bytes, arrays and tables, whose storage the
    /// caller provides (scoped on the publish path, in an arena for declarations).
    init?(scalar value: AMQPFieldValue) {
        self.init()
        switch value {
        case .bool(let flag):
            kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue)
            self.value.boolean = flag ? 1 : 0
        case .int(let number):
            kind = UInt8(AMQP_FIELD_KIND_I64.rawValue)
            self.value.i64 = number
        case .uint(let number):
            kind = UInt8(AMQP_FIELD_KIND_U64.rawValue)
            self.value.u64 = number
        case .double(let number):
            kind = UInt8(AMQP_FIELD_KIND_F64.rawValue)
            self.value.f64 = number
        case .decimal(let scale, let number):
            kind = UInt8(AMQP_FIELD_KIND_DECIMAL.rawValue)
            self.value.decimal = amqp_decimal_t(decimals: scale, value: number)
        case .timestamp(let seconds):
            kind = UInt8(AMQP_FIELD_KIND_TIMESTAMP.rawValue)
            self.value.u64 = seconds
        case .void:
            kind = UInt8(AMQP_FIELD_KIND_VOID.rawValue)
        case .string, .bytes, .array, .table:
            return nil
        }
    }
}

/// Calls `body` with `value` as a C field value whose strings live only inside it.
func withAMQPFieldValue<Result>(_ value: AMQPFieldValue, _ body: (amqp_field_value_t) -> Result) -> Result {
    if let scalar = amqp_field_value_t(scalar: value) { return body(scalar) }
    var field = amqp_field_value_t()
    switch value {
    case .string(let text):
        field.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
        return withAMQPBytes(of: text) { (bytes: amqp_bytes_t) -> Result in
            field.value.bytes = bytes
            return body(field)
        }
    case .bytes(let data):
        field.kind = UInt8(AMQP_FIELD_KIND_BYTES.rawValue)
        return data.withUnsafeBytes { raw in
            field.value.bytes = amqp_bytes_t(len: raw.count, bytes: UnsafeMutableRawPointer(mutating: raw.baseAddress))
            return body(field)
        }
    case .array(let elements):
        field.kind = UInt8(AMQP_FIELD_KIND_ARRAY.rawValue)
        return withUnsafeTemporaryAllocation(of: amqp_field_value_t.self, capacity: max(elements.count, 1)) { storage in
            withElements(elements, at: 0, into: storage) {
                field.value.array = amqp_array_t(num_entries: Int32(elements.count), entries: storage.baseAddress)
                return body(field)
            }
        }
    case .table(let nested):
        field.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue)
        return withAMQPTable(nested) { table in
            field.value.table = table
            return body(field)
        }
    case .bool, .int, .uint, .double, .decimal, .timestamp, .void:
        return body(field)  // handled above
    }
}

private func withElements<Result>(
    _ elements: [AMQPFieldValue], at index: Int, into storage: UnsafeMutableBufferPointer<amqp_field_value_t>,
    _ body: () -> Result
) -> Result {
    guard index < elements.count else { return body() }
    return withAMQPFieldValue(elements[index]) { value in
        storage.baseAddress!.advanced(by: index).initialize(to: value)
        return withElements(elements, at: index + 1, into: storage, body)
    }
}

extension AMQPProperties {
    /// Calls `body` with these properties as rabbitmq-c's struct, its strings and headers
    /// valid only inside it.
    func withCProperties<Result>(_ body: (inout amqp_basic_properties_t) -> Result) -> Result {
        // Locals, not `self`: a closure that captures `self` copies every field of it, once
        // per level of nesting.
        let (contentType, contentEncoding, correlationID, replyTo) = (contentType, contentEncoding, correlationID, replyTo)
        let (expiration, messageID, type, userID, appID, headers) = (expiration, messageID, type, userID, appID, headers)
        var c = amqp_basic_properties_t()
        var flags = UInt32(AMQP_BASIC_DELIVERY_MODE_FLAG)
        c.delivery_mode = persistent ? 2 : 1
        if let priority {
            c.priority = priority
            flags |= UInt32(AMQP_BASIC_PRIORITY_FLAG)
        }
        if let timestamp {
            c.timestamp = UInt64(max(0, timestamp.timeIntervalSince1970))
            flags |= UInt32(AMQP_BASIC_TIMESTAMP_FLAG)
        }
        func set(_ bytes: amqp_bytes_t?, _ flag: Int32, _ field: inout amqp_bytes_t) {
            guard let bytes else { return }
            field = bytes
            flags |= UInt32(flag)
        }
        // One scope per string property; every one is alive at the innermost level.
        return withAMQPBytes(of: contentType) { (contentType: amqp_bytes_t?) -> Result in
            withAMQPBytes(of: contentEncoding) { (contentEncoding: amqp_bytes_t?) -> Result in
                withAMQPBytes(of: correlationID) { (correlationID: amqp_bytes_t?) -> Result in
                    withAMQPBytes(of: replyTo) { (replyTo: amqp_bytes_t?) -> Result in
                        withAMQPBytes(of: expiration) { (expiration: amqp_bytes_t?) -> Result in
                            withAMQPBytes(of: messageID) { (messageID: amqp_bytes_t?) -> Result in
                                withAMQPBytes(of: type) { (type: amqp_bytes_t?) -> Result in
                                    withAMQPBytes(of: userID) { (userID: amqp_bytes_t?) -> Result in
                                        withAMQPBytes(of: appID) { (appID: amqp_bytes_t?) -> Result in
                                            withAMQPTable(headers) { (headers: amqp_table_t) -> Result in
                                                set(contentType, AMQP_BASIC_CONTENT_TYPE_FLAG, &c.content_type)
                                                set(contentEncoding, AMQP_BASIC_CONTENT_ENCODING_FLAG, &c.content_encoding)
                                                if headers.num_entries > 0 {
                                                    c.headers = headers
                                                    flags |= UInt32(AMQP_BASIC_HEADERS_FLAG)
                                                }
                                                set(correlationID, AMQP_BASIC_CORRELATION_ID_FLAG, &c.correlation_id)
                                                set(replyTo, AMQP_BASIC_REPLY_TO_FLAG, &c.reply_to)
                                                set(expiration, AMQP_BASIC_EXPIRATION_FLAG, &c.expiration)
                                                set(messageID, AMQP_BASIC_MESSAGE_ID_FLAG, &c.message_id)
                                                set(type, AMQP_BASIC_TYPE_FLAG, &c.type)
                                                set(userID, AMQP_BASIC_USER_ID_FLAG, &c.user_id)
                                                set(appID, AMQP_BASIC_APP_ID_FLAG, &c.app_id)
                                                c._flags = flags
                                                return body(&c)
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

extension AMQPMessage {
    /// Calls `body` with everything `basic.publish` sends, as C values valid only inside it.
    func withCPublish<Result>(
        _ body: (_ exchange: amqp_bytes_t, _ routingKey: amqp_bytes_t, _ properties: inout amqp_basic_properties_t,
            _ content: UnsafeRawBufferPointer) -> Result
    ) -> Result {
        let (exchange, routingKey, properties, content) = (exchange, routingKey, properties, self.body)
        return content.withUnsafeBytes { content in
            withAMQPBytes(of: exchange) { (exchange: amqp_bytes_t) -> Result in
                withAMQPBytes(of: routingKey) { (routingKey: amqp_bytes_t) -> Result in
                    properties.withCProperties { properties in body(exchange, routingKey, &properties, content) }
                }
            }
        }
    }
}
