/// A bit rate in bits per second. Config text: "128k", "2.5M", "2500k", "800bps", "128kbps", "2.5Mbps",
/// "1G"; `k` = 1000 (suffixes are case-insensitive; "bps" / "b/s" may follow). A bare number has no
/// unit and is refused: `2500` meant as 2500k would be 2500 bit/s.
public struct Bitrate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var bitsPerSecond: Int

    public init(bitsPerSecond: Int) {
        self.bitsPerSecond = bitsPerSecond
    }

    public init(kilobits: Int) {
        self.bitsPerSecond = kilobits * 1000
    }

    public init?(configText: String) {
        var t = Substring(configText.trimmingCharacters(in: .whitespaces)).lowercased()[...]
        var hasUnit = false
        for unit in ["bps", "b/s"] where t.hasSuffix(unit) {
            t = t.dropLast(unit.count)
            hasUnit = true
            break
        }
        var multiplier = 1.0
        if let last = t.last, let m = ["k": 1e3, "m": 1e6, "g": 1e9][String(last)] {
            multiplier = m
            t = t.dropLast()
            hasUnit = true
        }
        guard hasUnit else { return nil }
        guard !t.isEmpty, t.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              t.first != ".", t.last != ".",
              let number = Double(t) else { return nil }
        let bps = (number * multiplier).rounded()
        // A fraction of a bit per second (e.g. "2.5") is not meaningful.
        guard abs(bps - number * multiplier) < 1e-6, bps < 1e15 else { return nil }
        self.bitsPerSecond = Int(bps)
    }

    /// Whole kilobits per second (truncated).
    public var kilobits: Int { bitsPerSecond / 1000 }

    /// Canonical config text: "128k" / "2500k" when divisible by 1000, else bits per second ("800bps").
    public var description: String {
        bitsPerSecond % 1000 == 0 && bitsPerSecond != 0 ? "\(bitsPerSecond / 1000)k" : "\(bitsPerSecond)bps"
    }

    /// True for a number with no unit ("2500"): the one mistake worth naming.
    public static func lacksUnit(_ text: String) -> Bool {
        let t = text.trimmingCharacters(in: .whitespaces)
        return !t.isEmpty && t.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") } && Double(t) != nil
    }

    public static func < (lhs: Bitrate, rhs: Bitrate) -> Bool {
        lhs.bitsPerSecond < rhs.bitsPerSecond
    }
}
