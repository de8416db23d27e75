import Foundation

/// Seconds counted in buckets 1 % wide from 1 ms to 1,000 s (the end buckets take what lies
/// beyond), each bucket keeping the largest value it was given: percentiles in fixed memory
/// however many values come, each a value that was recorded and within 1 % of the exact
/// nearest-rank percentile (HdrHistogram's idea, in its simplest form).
public struct SecondsHistogram: Sendable, Equatable {
    static let smallest = 0.001, growth = 1.01
    static let bucketCount = Int((log(1e6) / log(growth)).rounded(.up)) + 2
    private var counts: [Int]
    private var largest: [Double]
    public private(set) var count = 0

    public init() {
        counts = Array(repeating: 0, count: Self.bucketCount)
        largest = Array(repeating: 0, count: Self.bucketCount)
    }

    static func bucket(_ value: Double) -> Int {
        guard value > smallest else { return 0 }
        return min(bucketCount - 1, Int(log(value / smallest) / log(growth)) + 1)
    }

    public mutating func record(_ value: Double) {
        guard value.isFinite else { return }
        let bucket = Self.bucket(value)
        counts[bucket] += 1
        largest[bucket] = max(largest[bucket], value)
        count += 1
    }

    /// The value at `share` (0 to 1) of the way up, by nearest rank; nil when nothing was recorded.
    public func percentile(_ share: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = min(count, max(1, Int((share * Double(count)).rounded(.up))))
        var seen = 0
        for (bucket, inBucket) in counts.enumerated() where inBucket > 0 {
            seen += inBucket
            if seen >= rank { return largest[bucket] }
        }
        return nil
    }
}
