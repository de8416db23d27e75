import Foundation

/// Config-file text for Swift's `Duration`: "500ms", "2s", "1.5s", "1h30m", "10m", "250us", "0".
///
/// Grammar: one or more `<number><unit>` parts (`1h30m`, `1m0.5s`), units `h`, `m`, `s`, `ms`, `us` (or `µs`),
/// `ns`; a number may have a fraction (`1.5s`). A bare `0` is allowed; any other bare number is rejected
/// (it is ambiguous). Negative durations are rejected. Precision is one nanosecond.
extension Duration {
    public init?(configText: String) {
        guard let ns = DurationText.parseNanoseconds(configText) else { return nil }
        self = .nanoseconds(ns)
    }

    /// Canonical text: "0s", "250us", "500ms", "1.5s", "1m30s", "1h30m", "2h0.5s" (zero parts are left out).
    public var configText: String {
        DurationText.format(nanoseconds: totalNanoseconds)
    }

    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds (truncated toward zero; saturates at `Int64` bounds).
    public var totalNanoseconds: Int64 {
        let (s, a) = components
        let (whole, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return s < 0 ? .min : .max }
        let (sum, overflow2) = whole.addingReportingOverflow(a / 1_000_000_000)
        if overflow2 { return s < 0 ? .min : .max }
        return sum
    }
}

package enum DurationText {
    static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ms", 1_000_000), ("us", 1_000), ("µs", 1_000), ("ns", 1),
        ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000),
    ]

    /// What is wrong with a duration text, for error messages.
    package enum Problem { case notADuration, noUnit, negative }

    package static func problem(_ text: String) -> Problem {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.hasPrefix("-"), parseNanoseconds(String(t.dropFirst())) != nil { return .negative }
        if let d = Double(t), d.isFinite, d != 0 { return d < 0 ? .negative : .noUnit }
        return .notADuration
    }

    static func parseNanoseconds(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t == "0" { return 0 }
        var rest = Substring(t)
        guard !rest.isEmpty else { return nil }
        var total: Int64 = 0
        var previousUnit = Int64.max
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1,
                  number.first != ".", number.last != "." else { return nil }
            rest = rest.dropFirst(number.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.suffix) }) else { return nil }
            // Units must go from larger to smaller ("1h30m", not "30m1h"), each at most once.
            guard unit.nanoseconds < previousUnit else { return nil }
            previousUnit = unit.nanoseconds
            rest = rest.dropFirst(unit.suffix.count)
            let parts = number.split(separator: ".", omittingEmptySubsequences: false)
            guard let whole = Int64(parts[0]) else { return nil }
            var (value, overflow) = whole.multipliedReportingOverflow(by: unit.nanoseconds)
            guard !overflow else { return nil }
            if parts.count == 2 {
                guard let fraction = Double("0." + parts[1]) else { return nil }
                let extra = (fraction * Double(unit.nanoseconds)).rounded()
                guard extra < 9e18 else { return nil }
                (value, overflow) = value.addingReportingOverflow(Int64(extra))
                guard !overflow else { return nil }
            }
            (total, overflow) = total.addingReportingOverflow(value)
            guard !overflow else { return nil }
        }
        return total
    }

    static func format(nanoseconds ns: Int64) -> String {
        if ns == 0 { return "0s" }
        if ns < 0 { return "-" + format(nanoseconds: ns == .min ? .max : -ns) }
        if ns < 1_000_000_000 {
            if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
            if ns % 1_000 == 0 { return "\(ns / 1_000)us" }
            return "\(ns)ns"
        }
        let hours = ns / 3_600_000_000_000
        let minutes = (ns % 3_600_000_000_000) / 60_000_000_000
        let secondsNs = ns % 60_000_000_000
        var text = ""
        if hours > 0 { text += "\(hours)h" }
        if minutes > 0 { text += "\(minutes)m" }
        if secondsNs > 0 {
            let whole = secondsNs / 1_000_000_000
            let fraction = secondsNs % 1_000_000_000
            if fraction == 0 {
                text += "\(whole)s"
            } else if text.isEmpty || secondsNs >= 1_000_000_000 || fraction % 1_000_000 != 0 {
                var digits = String(fraction)
                digits = String(repeating: "0", count: 9 - digits.count) + digits
                while digits.hasSuffix("0") { digits.removeLast() }
                text += "\(whole).\(digits)s"
            } else {
                text += "\(fraction / 1_000_000)ms"
            }
        }
        return text
    }
}
