import Foundation

/// `rendition: auto` as it plays: the variant the measured throughput carries.
public struct ABRController: Sendable {
    /// The variants with video, by bandwidth: what it adapts across.
    public let variants: [MultivariantPlaylist.Variant]

    public init(variants: [MultivariantPlaylist.Variant]) {
        self.variants = variants.filter { $0.hasVideo != false }.sorted { $0.bandwidth < $1.bandwidth }
    }

    /// The variant for a measured throughput (bit/s): the best that fits in 80 % of it, or the lowest.
    public func variant(forThroughput throughput: Double) -> MultivariantPlaylist.Variant? {
        variants.last { Double($0.bandwidth) <= throughput * 0.8 } ?? variants.first
    }

    /// The variant to move to from `current` (its URL) at a measured throughput; nil to stay.
    public func move(from current: URL?, throughput: Double) -> MultivariantPlaylist.Variant? {
        guard let best = variant(forThroughput: throughput), best.uri != current else { return nil }
        return best
    }
}

/// Download throughput as players estimate it: bits per second of each segment's fetch
/// (waiting for the server included), smoothed over segments.
public struct ThroughputEstimate: Sendable, Equatable {
    public private(set) var bitsPerSecond: Double?

    public init() {}

    public mutating func segmentFetched(bytes: Int, seconds: Double) {
        guard seconds > 0, bytes > 0 else { return }
        let rate = Double(bytes) * 8 / seconds
        bitsPerSecond = bitsPerSecond.map { 0.7 * $0 + 0.3 * rate } ?? rate
    }
}
