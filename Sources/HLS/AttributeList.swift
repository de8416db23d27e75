import Foundation

/// The parser reads the body as bytes: a line is a view into it, never a copy,
/// and only the values kept become `String`s (this is what makes 100,000 segments cheap).
typealias Bytes = UnsafeBufferPointer<UInt8>

extension UnsafeBufferPointer<UInt8> {
    /// Bytes `from..<to`, clamped to the buffer, indexed from 0.
    func sub(_ from: Int, _ to: Int) -> Bytes {
        // Not Swift.min/max: generic, they are calls in a debug build, and this runs several times a line.
        let start = from < 0 ? 0 : from > count ? count : from
        let end = to < start ? start : to > count ? count : to
        return Bytes(rebasing: self[start..<end])
    }

    /// The index of the first `byte` at or after `from` (memchr: the line scan's hot loop).
    func find(_ byte: UInt8, from: Int = 0) -> Int? {
        guard let base = baseAddress, from >= 0, from < count,
              let hit = memchr(base + from, Int32(byte), count - from) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
    }

    func hasPrefix(_ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard n > 0 else { return true }
        guard count >= n, let base = baseAddress else { return false }
        return memcmp(base, prefix.utf8Start, n) == 0
    }

    func equals(_ other: StaticString) -> Bool { count == other.utf8CodeUnitCount && hasPrefix(other) }

    func equals(_ other: Bytes) -> Bool {
        guard count == other.count else { return false }
        guard count > 0, let a = baseAddress, let b = other.baseAddress else { return true }
        return memcmp(a, b, count) == 0
    }

    /// Without leading and trailing spaces, tabs and CRs (CRLF line ends, padded values).
    var trimmed: Bytes {
        var start = 0, end = count
        while start < end, self[start] == 0x20 || self[start] == 0x09 || self[start] == 0x0D { start += 1 }
        while end > start, self[end - 1] == 0x20 || self[end - 1] == 0x09 || self[end - 1] == 0x0D { end -= 1 }
        return start == 0 && end == count ? self : sub(start, end)
    }

    /// The body was checked to be UTF-8 and is only ever cut at ASCII bytes, so this never repairs.
    var string: String { String(decoding: self, as: UTF8.self) }

    /// For an error message: at most 40 bytes, so a 64 KiB line does not become a 64 KiB message.
    var quoted: String {
        count <= 40 ? "\"\(string)\"" : "\"\(String(decoding: sub(0, 40), as: UTF8.self))…\""
    }
}

extension UInt8 {
    var isBlank: Bool { self == 0x20 || self == 0x09 || self == 0x0D }
}

/// An attribute list (§4.2): `NAME=value,NAME="quoted, value",NAME=0x1234`.
/// Lenient where it costs nothing: blanks around names and values, an unterminated
/// quoted string (taken to the end of the line), a name without a value (skipped).
struct AttributeList {
    private var entries: [(name: Bytes, value: Bytes)] = []

    init(_ text: Bytes) {
        var i = 0
        while i < text.count {
            let nameStart = i
            while i < text.count, text[i] != UInt8(ascii: "="), text[i] != UInt8(ascii: ",") { i += 1 }
            let name = text.sub(nameStart, i).trimmed
            guard i < text.count, text[i] == UInt8(ascii: "=") else { i += 1; continue }
            i += 1
            while i < text.count, text[i].isBlank { i += 1 }
            let value: Bytes
            if i < text.count, text[i] == UInt8(ascii: "\"") {
                let close = text.find(UInt8(ascii: "\""), from: i + 1) ?? text.count
                value = text.sub(i + 1, close)
                i = (text.find(UInt8(ascii: ","), from: close) ?? text.count) + 1
            } else {
                let comma = text.find(UInt8(ascii: ","), from: i) ?? text.count
                value = text.sub(i, comma).trimmed
                i = comma + 1
            }
            // §4.2: a name appears at most once; if not, the first one counts (the subscript finds it first).
            // Not checked here: on a 64 KiB line of `A=1,A=1,...` that check would be quadratic.
            if !name.isEmpty { entries.append((name, value)) }
        }
    }

    subscript(name: StaticString) -> Bytes? { entries.first { $0.name.equals(name) }?.value }
}

/// Readers for the value types of §4.2 (and the date of §4.3.2.6). nil: not of that type.
enum Value {
    /// decimal-integer, with an optional `-` so that a negative number can be called that.
    /// Saturates at Int.max rather than overflowing: the caller's limit then rejects it.
    static func integer(_ text: Bytes) -> Int? {
        let negative = text.first == UInt8(ascii: "-")
        let digits = text.sub(negative ? 1 : 0, text.count)
        guard !digits.isEmpty else { return nil }
        var n = 0
        // Index loops here, not `for in`/`enumerated()`: those cost several times more in a debug build.
        var i = 0
        while i < digits.count {
            let digit = digits[i] &- UInt8(ascii: "0")
            i += 1
            guard digit < 10 else { return nil }
            let (times10, o1) = n.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int(digit))
            n = o1 || o2 ? .max : sum
        }
        return negative ? -n : n
    }

    /// decimal-floating-point, or signed-decimal-floating-point: `[-]digits[.digits]`.
    /// Not Double(String) alone: that also takes "nan", "inf", "0x1p4" and "1e9".
    static func decimal(_ text: Bytes) -> Double? {
        var sawDigit = false, sawPoint = false
        var i = 0
        while i < text.count {
            let byte = text[i]
            defer { i += 1 }
            if byte &- UInt8(ascii: "0") < 10 {
                sawDigit = true
            } else if byte == UInt8(ascii: "."), !sawPoint {
                sawPoint = true
            } else if !(byte == UInt8(ascii: "-") && i == 0) {
                return nil
            }
        }
        return sawDigit ? Double(text.string) : nil
    }

    /// hexadecimal-sequence (`0x...`) of at most `bytes` bytes, right-aligned: the IV of §4.3.2.4
    /// is 128 bits, and writers that drop leading zeros still mean that number.
    static func hex(_ text: Bytes, bytes: Int) -> [UInt8]? {
        guard text.hasPrefix("0x") || text.hasPrefix("0X") else { return nil }
        let digits = text.sub(2, text.count)
        guard !digits.isEmpty, digits.count <= bytes * 2 else { return nil }
        var out = [UInt8](repeating: 0, count: bytes)
        for i in 0..<digits.count {
            let byte = digits[digits.count - 1 - i]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            out[bytes - 1 - i / 2] |= i % 2 == 0 ? nibble : nibble << 4
        }
        return out
    }

    /// `<n>[@<o>]` (§4.3.2.2), as written: the caller decides what a missing offset means.
    static func byteRange(_ text: Bytes) -> (length: Int, offset: Int?)? {
        let at = text.find(UInt8(ascii: "@"))
        guard let length = integer(text.sub(0, at ?? text.count).trimmed) else { return nil }
        guard let at else { return (length, nil) }
        guard let offset = integer(text.sub(at + 1, text.count).trimmed) else { return nil }
        return (length, offset)
    }

    /// The date-time of `#EXT-X-PROGRAM-DATE-TIME` (ISO 8601, RFC 3339):
    /// `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm|±hhmm|±hh)`. Also taken: a space or `t` for `T`,
    /// seconds left out, and no zone at all (read as UTC, which is what such writers mean).
    /// Hand-written: ISO8601DateFormatter costs microseconds a line, and some playlists date every segment.
    static func date(_ text: Bytes) -> Date? {
        var i = 0
        func number(_ digits: Int) -> Int? {
            guard i + digits <= text.count else { return nil }
            var n = 0
            for _ in 0..<digits {
                let digit = text[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                n = n * 10 + Int(digit)
                i += 1
            }
            return n
        }
        func skip(_ byte: UInt8) -> Bool {
            guard i < text.count, text[i] == byte else { return false }
            i += 1
            return true
        }
        guard let year = number(4), skip(UInt8(ascii: "-")), let month = number(2), skip(UInt8(ascii: "-")),
              let day = number(2), skip(UInt8(ascii: "T")) || skip(UInt8(ascii: "t")) || skip(0x20)
        else { return nil }
        guard let hour = number(2), skip(UInt8(ascii: ":")), let minute = number(2) else { return nil }
        var second = 0.0
        if skip(UInt8(ascii: ":")) {
            guard let whole = number(2) else { return nil }
            second = Double(whole)
            if skip(UInt8(ascii: ".")) || skip(UInt8(ascii: ",")) {
                // As a whole number over a power of ten (exact to 15 digits; later ones are below a Date's precision).
                var numerator = 0, denominator = 1, any = false
                while i < text.count, text[i] &- UInt8(ascii: "0") < 10 {
                    if denominator < 1_000_000_000_000_000 {
                        numerator = numerator * 10 + Int(text[i] &- UInt8(ascii: "0"))
                        denominator *= 10
                    }
                    any = true
                    i += 1
                }
                guard any else { return nil }
                second += Double(numerator) / Double(denominator)
            }
        }
        var offset = 0
        if i < text.count {
            let sign = text[i]
            i += 1
            if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                guard let hours = number(2), hours < 24 else { return nil }
                _ = skip(UInt8(ascii: ":"))
                let minutes = i < text.count ? number(2) : 0
                guard let minutes, minutes < 60 else { return nil }
                offset = (hours * 60 + minutes) * 60 * (sign == UInt8(ascii: "-") ? -1 : 1)
            } else if sign != UInt8(ascii: "Z"), sign != UInt8(ascii: "z") {
                return nil
            }
            guard i == text.count else { return nil }
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = Double(days * 86_400 + hour * 3_600 + minute * 60 - offset) + second
        return Date(timeIntervalSince1970: seconds)
    }
}
