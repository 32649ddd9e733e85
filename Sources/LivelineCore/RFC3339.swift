// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift

/// RFC 3339 timestamps (the CloudEvents `time` format), parsed and written by hand.
///
/// Hand-written because Foundation's formatters differ between platforms in how many
/// fractional digits they accept, and the result here must be exact to the
/// millisecond and identical everywhere.
public enum RFC3339 {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`/`z` and a space for `T`
    /// are accepted as RFC 3339 allows. Digits past milliseconds are truncated.
    /// Returns nil for anything else, including out-of-range fields.
    public static func parse(_ text: String) -> EventTime? {
        // Every event's time and every job's go through here: the bytes are read in place,
        // and the separators are compared, not looked up in sets built per call.
        var text = text
        return text.withUTF8(parse(_:))
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> EventTime? {
        var index = 0

        func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for offset in 0..<count {
                let byte = bytes[index + offset]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ allowed: (UInt8) -> Bool) -> Bool {
            guard index < bytes.count, allowed(bytes[index]) else { return false }
            index += 1
            return true
        }

        guard let year = digits(4), expect({ $0 == 0x2D }), let month = digits(2), expect({ $0 == 0x2D }),
              let day = digits(2), expect({ $0 == 0x54 || $0 == 0x74 || $0 == 0x20 }),
              let hour = digits(2), expect({ $0 == 0x3A }), let minute = digits(2), expect({ $0 == 0x3A }),
              let second = digits(2)
        else { return nil }

        var millis: Int64 = 0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var fractionDigits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if fractionDigits < 3 { millis = millis * 10 + Int64(bytes[index] - 0x30) }
                fractionDigits += 1
                index += 1
            }
            guard fractionDigits > 0 else { return nil }
            // Pad ".1" to 100 ms; a range is not used because it would trap for > 3 digits.
            var padded = fractionDigits
            while padded < 3 { millis *= 10; padded += 1 }
        }

        var offsetMinutes: Int64 = 0
        guard index < bytes.count else { return nil }
        if expect({ $0 == 0x5A || $0 == 0x7A }) {
            offsetMinutes = 0
        } else {
            let sign: Int64
            if expect({ $0 == 0x2B }) { sign = 1 } else if expect({ $0 == 0x2D }) { sign = -1 } else { return nil }
            guard let offsetHour = digits(2), expect({ $0 == 0x3A }), let offsetMinute = digits(2),
                  offsetHour <= 23, offsetMinute <= 59
            else { return nil }
            offsetMinutes = sign * (offsetHour * 60 + offsetMinute)
        }
        guard index == bytes.count else { return nil }

        // Second 60 is a leap second; it is folded into the next second.
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
              hour <= 23, minute <= 59, second <= 60
        else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetMinutes * 60
        return EventTime(millisecondsSince1970: seconds * 1_000 + millis)
    }

    /// Formats as UTC with exactly three fractional digits, e.g. `2026-11-21T10:00:00.120Z`.
    public static func format(_ time: EventTime) -> String {
        let millis = time.millisecondsSince1970
        let (secondsRaw, remainderRaw) = millis.quotientAndRemainder(dividingBy: 1_000)
        let seconds = remainderRaw < 0 ? secondsRaw - 1 : secondsRaw
        let fraction = remainderRaw < 0 ? remainderRaw + 1_000 : remainderRaw
        let (daysRaw, secondOfDayRaw) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let days = secondOfDayRaw < 0 ? daysRaw - 1 : daysRaw
        let secondOfDay = secondOfDayRaw < 0 ? secondOfDayRaw + 86_400 : secondOfDayRaw
        let (year, month, day) = civilFromDays(days)
        if (0...9_999).contains(year) {
            // Written in place: the interpolated form below cost more than the rest of a
            // push job's fields, and every job carries two times.
            return String(unsafeUninitializedCapacity: 24) { text in
                func put(_ value: Int64, _ width: Int, at end: Int, then separator: UInt8) {
                    var value = value
                    for index in stride(from: end - 1, through: end - width, by: -1) {
                        text[index] = UInt8(ascii: "0") + UInt8(value % 10)
                        value /= 10
                    }
                    text[end] = separator
                }
                put(year, 4, at: 4, then: UInt8(ascii: "-"))
                put(month, 2, at: 7, then: UInt8(ascii: "-"))
                put(day, 2, at: 10, then: UInt8(ascii: "T"))
                put(secondOfDay / 3_600, 2, at: 13, then: UInt8(ascii: ":"))
                put(secondOfDay % 3_600 / 60, 2, at: 16, then: UInt8(ascii: ":"))
                put(secondOfDay % 60, 2, at: 19, then: UInt8(ascii: "."))
                put(fraction, 3, at: 23, then: UInt8(ascii: "Z"))
                return 24
            }
        }
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
            + "\(pad(secondOfDay / 3_600, 2)):\(pad(secondOfDay % 3_600 / 60, 2)):\(pad(secondOfDay % 60, 2))"
            + ".\(pad(fraction, 3))Z"
    }

    private static func isLeap(_ year: Int64) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
