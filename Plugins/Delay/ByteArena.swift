/// Packs encoded units' bytes into large shared chunks, one allocation per
/// chunk instead of one (or, with GStreamer buffers, three) per unit.
///
/// Why: an hour of 128 kbps AAC is ~170,000 units of ~340 bytes. Holding each
/// as its own GstBuffer + GstMemory costs a few hundred bytes of overhead per
/// unit, which alone breaks the "RSS ≤ 1.2 × bytes held" budget. Copying the
/// bytes in here (and making a fresh buffer at play-out, ~50 a second) keeps
/// the overhead to a 16-byte `ByteSlice` per unit plus the unused tail of a chunk.
/// A chunk is freed by ARC when the history evicts the last slice in it; one
/// arena per stream keeps chunks in eviction order.
public struct ByteArena: ~Copyable {
    public let chunkSize: Int
    private var current: ByteChunk?
    private var used = 0

    public init(chunkSize: Int = 64 * 1024) {
        precondition(chunkSize > 0, "chunk size \(chunkSize) must be positive")
        self.chunkSize = chunkSize
    }

    /// Copies `bytes` in and returns the slice that holds them. A unit larger
    /// than `chunkSize` gets a chunk of its own.
    public mutating func store(_ bytes: UnsafeRawBufferPointer) -> ByteSlice {
        if bytes.count > chunkSize {
            let chunk = ByteChunk(capacity: bytes.count)
            chunk.copy(bytes, to: 0)
            return ByteSlice(chunk: chunk, offset: 0, count: Int32(bytes.count))
        }
        let chunk: ByteChunk
        if let current, used + bytes.count <= chunkSize {
            chunk = current
        } else {
            // The old chunk's unused tail is the only waste: under one unit.
            chunk = ByteChunk(capacity: chunkSize)
            current = chunk
            used = 0
        }
        chunk.copy(bytes, to: used)
        let slice = ByteSlice(chunk: chunk, offset: Int32(used), count: Int32(bytes.count))
        used += bytes.count
        return slice
    }

    public mutating func store(_ bytes: [UInt8]) -> ByteSlice {
        bytes.withUnsafeBytes { store($0) }
    }
}

/// Bytes of one unit inside a `ByteChunk`.
public struct ByteSlice: Sendable {
    let chunk: ByteChunk
    let offset: Int32
    public let count: Int32

    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: chunk.storage[Int(offset)..<(Int(offset) + Int(count))]))
    }

    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

/// A fixed block of memory. `@unchecked Sendable` because a range is written
/// exactly once, by the one arena that owns the chunk, before the `ByteSlice`
/// naming it exists; after that the range is only read. Slices never overlap.
final class ByteChunk: @unchecked Sendable {
    let storage: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    func copy(_ bytes: UnsafeRawBufferPointer, to offset: Int) {
        UnsafeMutableRawBufferPointer(rebasing: storage[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
    }

    deinit { storage.deallocate() }
}

/// A stream's byte arena, in a class so an array of them can sit in a Mutex.
final class ByteArenaBox: @unchecked Sendable {  // only touched under DelayPlayout.arenas' lock
    var arena = ByteArena()
}

/// A unit held for play-out: its bytes, and how far its presentation lies after its decode time
/// (a B-frame's reordering; 0 for audio), the time the history keeps it by.
struct HeldSample: Sendable {
    let bytes: ByteSlice
    let reorder: UInt64
}
