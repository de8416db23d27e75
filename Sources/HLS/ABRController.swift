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
}
