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
