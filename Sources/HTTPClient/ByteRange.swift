import Foundation

/// Part of a resource: `length` bytes from `offset` (HLS's `EXT-X-BYTERANGE`, HTTP's `Range`).
public struct ByteRange: Equatable, Sendable {
    public var offset: Int
    public var length: Int
    public init(offset: Int, length: Int) {
        self.offset = offset
        self.length = length
    }
    /// The HTTP `Range` header value.
    public var header: String { "bytes=\(offset)-\(offset + length - 1)" }
}

/// The part of a whole body that a range wanted, cut out as its chunks pass (a server that
/// ignores `Range` answers 200 with everything).
struct RangeCut: Sendable {
    private var skip: Int
    private var take: Int

    init(_ range: ByteRange) {
        (skip, take) = (range.offset, range.length)
    }

    /// What of `chunk` is wanted, and whether the range is whole with it.
    mutating func cut(_ chunk: Data) -> (kept: Data, complete: Bool) {
        let dropped = min(skip, chunk.count)
        skip -= dropped
        let kept = chunk.dropFirst(dropped).prefix(take)
        take -= kept.count
        return (Data(kept), take == 0)
    }
}
