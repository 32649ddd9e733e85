import CRabbitMQ
import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPTableTests.swift, Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

/// Memory for C structures handed to one rabbitmq-c call (strings and tables).
///
/// rabbitmq-c borrows every `amqp_bytes_t` for the length of the call only, so the owner
/// thread fills an arena, makes the call, and resets the arena. It serves the rare calls
/// (login, declarations, consume); publishing lends its strings with the scoped `with…`
/// functions of CScoped.swift instead, with no allocation per string. Not thread-safe: it
/// lives on the connection's owner thread.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit { reset() }

    func reset() {
        for block in blocks { free(block) }
        blocks.removeAll(keepingCapacity: true)
    }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        let block = malloc(max(size, 1))!
        blocks.append(block)
        return block
    }

    func bytes(_ string: String) -> amqp_bytes_t {
        var string = string
        return string.withUTF8 { utf8 in
            let block = allocate(utf8.count)
            if utf8.count > 0 { block.copyMemory(from: utf8.baseAddress!, byteCount: utf8.count) }
            return amqp_bytes_t(len: utf8.count, bytes: block)
        }
    }

    func bytes(_ data: [UInt8]) -> amqp_bytes_t {
        let block = allocate(data.count)
        data.withUnsafeBytes { if $0.count > 0 { block.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        return amqp_bytes_t(len: data.count, bytes: block)
    }

    func table(_ table: AMQPTable) -> amqp_table_t {
        guard !table.isEmpty else { return amqp_empty_table }
        let entries = allocate(MemoryLayout<amqp_table_entry_t>.stride * table.count)
            .bindMemory(to: amqp_table_entry_t.self, capacity: table.count)
        // Sorted keys keep the wire form deterministic, which makes declarations idempotent.
        for (index, entry) in table.sorted(by: { $0.key < $1.key }).enumerated() {
            entries[index] = amqp_table_entry_t(key: bytes(entry.key), value: fieldValue(entry.value))
        }
        return amqp_table_t(num_entries: Int32(table.count), entries: entries)
    }

    func fieldValue(_ value: AMQPFieldValue) -> amqp_field_value_t {
        if let scalar = amqp_field_value_t(scalar: value) { return scalar }
        var field = amqp_field_value_t()
        switch value {
        case .string(let text):
            field.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
            field.value.bytes = bytes(text)
        case .bytes(let data):
            field.kind = UInt8(AMQP_FIELD_KIND_BYTES.rawValue)
            field.value.bytes = bytes(data)
        case .array(let elements):
            field.kind = UInt8(AMQP_FIELD_KIND_ARRAY.rawValue)
            let storage = allocate(MemoryLayout<amqp_field_value_t>.stride * max(elements.count, 1))
                .bindMemory(to: amqp_field_value_t.self, capacity: max(elements.count, 1))
            for (index, element) in elements.enumerated() { storage[index] = fieldValue(element) }
            field.value.array = amqp_array_t(num_entries: Int32(elements.count), entries: storage)
        case .table(let nested):
            field.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue)
            field.value.table = self.table(nested)
        case .bool, .int, .uint, .double, .decimal, .timestamp, .void:
            break  // handled above
        }
        return field
    }
}

// MARK: - Reading C structures into Swift values

extension String {
    init(_ bytes: amqp_bytes_t) {
        guard let pointer = bytes.bytes, bytes.len > 0 else {
            self = ""
            return
        }
        self = String(decoding: UnsafeRawBufferPointer(start: pointer, count: bytes.len), as: UTF8.self)
    }
}

extension AMQPFieldValue {
    /// Table keys inside go through `names`.
    init(_ field: amqp_field_value_t, names: inout StringInterner) {
        switch Int32(field.kind) {
        case Int32(AMQP_FIELD_KIND_BOOLEAN.rawValue): self = .bool(field.value.boolean != 0)
        case Int32(AMQP_FIELD_KIND_I8.rawValue): self = .int(Int64(field.value.i8))
        case Int32(AMQP_FIELD_KIND_U8.rawValue): self = .int(Int64(field.value.u8))
        case Int32(AMQP_FIELD_KIND_I16.rawValue): self = .int(Int64(field.value.i16))
        case Int32(AMQP_FIELD_KIND_U16.rawValue): self = .int(Int64(field.value.u16))
        case Int32(AMQP_FIELD_KIND_I32.rawValue): self = .int(Int64(field.value.i32))
        case Int32(AMQP_FIELD_KIND_U32.rawValue): self = .int(Int64(field.value.u32))
        case Int32(AMQP_FIELD_KIND_I64.rawValue): self = .int(field.value.i64)
        case Int32(AMQP_FIELD_KIND_U64.rawValue): self = .uint(field.value.u64)
        case Int32(AMQP_FIELD_KIND_F32.rawValue): self = .double(Double(field.value.f32))
        case Int32(AMQP_FIELD_KIND_F64.rawValue): self = .double(field.value.f64)
        case Int32(AMQP_FIELD_KIND_DECIMAL.rawValue):
            self = .decimal(scale: field.value.decimal.decimals, value: field.value.decimal.value)
        case Int32(AMQP_FIELD_KIND_UTF8.rawValue): self = .string(String(field.value.bytes))
        case Int32(AMQP_FIELD_KIND_BYTES.rawValue):
            let raw = field.value.bytes
            self = .bytes(raw.bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: raw.len)) } ?? [])
        case Int32(AMQP_FIELD_KIND_TIMESTAMP.rawValue): self = .timestamp(field.value.u64)
        case Int32(AMQP_FIELD_KIND_ARRAY.rawValue):
            let array = field.value.array
            var elements: [AMQPFieldValue] = []
            for index in 0..<Int(array.num_entries) { elements.append(AMQPFieldValue(array.entries[index], names: &names)) }
            self = .array(elements)
        case Int32(AMQP_FIELD_KIND_TABLE.rawValue): self = .table(AMQPTable(c: field.value.table, names: &names))
        default: self = .void
        }
    }
}

extension AMQPTable {
    init(c table: amqp_table_t, names: inout StringInterner) {
        self.init()
        reserveCapacity(Int(table.num_entries))
        for index in 0..<Int(table.num_entries) {
            let entry = table.entries[index]
            self[names.string(entry.key)] = AMQPFieldValue(entry.value, names: &names)
        }
    }
}

extension AMQPProperties {
    /// Header names and the properties that name kinds (content type and encoding, type,
    /// user and app) go through `names`; ids and values do not, being new on every message.
    init(_ c: amqp_basic_properties_t, names: inout StringInterner) {
        let flags = c._flags
        func text(_ flag: Int32, _ value: amqp_bytes_t) -> String? {
            flags & UInt32(flag) != 0 ? String(value) : nil
        }
        func name(_ flag: Int32, _ value: amqp_bytes_t, _ names: inout StringInterner) -> String? {
            flags & UInt32(flag) != 0 ? names.string(value) : nil
        }
        self.init(
            contentType: name(AMQP_BASIC_CONTENT_TYPE_FLAG, c.content_type, &names),
            contentEncoding: name(AMQP_BASIC_CONTENT_ENCODING_FLAG, c.content_encoding, &names),
            headers: flags & UInt32(AMQP_BASIC_HEADERS_FLAG) != 0 ? AMQPTable(c: c.headers, names: &names) : [:],
            persistent: flags & UInt32(AMQP_BASIC_DELIVERY_MODE_FLAG) != 0 && c.delivery_mode == 2,
            priority: flags & UInt32(AMQP_BASIC_PRIORITY_FLAG) != 0 ? c.priority : nil,
            correlationID: text(AMQP_BASIC_CORRELATION_ID_FLAG, c.correlation_id),
            replyTo: text(AMQP_BASIC_REPLY_TO_FLAG, c.reply_to),
            expiration: text(AMQP_BASIC_EXPIRATION_FLAG, c.expiration),
            messageID: text(AMQP_BASIC_MESSAGE_ID_FLAG, c.message_id),
            timestamp: flags & UInt32(AMQP_BASIC_TIMESTAMP_FLAG) != 0
                ? Date(timeIntervalSince1970: TimeInterval(c.timestamp)) : nil,
            type: name(AMQP_BASIC_TYPE_FLAG, c.type, &names),
            userID: name(AMQP_BASIC_USER_ID_FLAG, c.user_id, &names),
            appID: name(AMQP_BASIC_APP_ID_FLAG, c.app_id, &names)
        )
    }
}
