/// A FIFO of values stored in fixed-size chunks, addressed by absolute index.
///
/// Why chunks and not one ring array: an hour of AAC is ~170,000 units, and a
/// growing ring doubles its capacity (up to 2x the per-unit storage held idle)
/// and copies everything when it grows. Chunks of `chunkCapacity` slots grow
/// and shrink one chunk at a time, so append and eviction are O(1) amortized
/// and at most one partly used chunk sits at each end.
///
/// Absolute indexes never reuse a number: the first value ever appended is 0,
/// and eviction only moves `startIndex` up. Play-out cursors keep absolute
/// indexes, so they stay valid while the front is evicted underneath them.
struct ChunkedDeque<Element> {
    /// Slots per chunk: a power of two so locating a slot is a shift and a mask.
    static var chunkShift: Int { 10 }
    static var chunkCapacity: Int { 1 << chunkShift }

    /// Evicted slots are set to nil so a payload (a GStreamer buffer, a byte
    /// slice) is released at eviction, not when its whole chunk goes.
    private var chunks: [[Element?]] = []
    /// Absolute index of `chunks[0][0]`.
    private var firstChunkBase = 0
    private(set) var startIndex = 0
    private(set) var endIndex = 0

    var count: Int { endIndex - startIndex }
    var isEmpty: Bool { startIndex == endIndex }

    subscript(index: Int) -> Element {
        let relative = index - firstChunkBase
        guard index >= startIndex, index < endIndex,
              let element = chunks[relative >> Self.chunkShift][relative & (Self.chunkCapacity - 1)]
        else { preconditionFailure("index \(index) outside \(startIndex)..<\(endIndex)") }
        return element
    }

    mutating func append(_ element: Element) {
        if chunks.isEmpty { firstChunkBase = endIndex }
        if let last = chunks.indices.last, chunks[last].count < Self.chunkCapacity {
            chunks[last].append(element)
        } else {
            var chunk: [Element?] = []
            chunk.reserveCapacity(Self.chunkCapacity)
            chunk.append(element)
            chunks.append(chunk)
        }
        endIndex += 1
    }

    /// Drops the oldest `count` values.
    mutating func removeFirst(_ count: Int) {
        precondition(count >= 0 && count <= self.count, "cannot remove \(count) of \(self.count)")
        for index in startIndex..<(startIndex + count) {
            let relative = index - firstChunkBase
            chunks[relative >> Self.chunkShift][relative & (Self.chunkCapacity - 1)] = nil
        }
        startIndex += count
        // A chunk goes once every slot in it is behind `startIndex`; the
        // outer array holds few chunks (~170 per hour of AAC), so shifting it is cheap.
        while !chunks.isEmpty, startIndex - firstChunkBase >= Self.chunkCapacity {
            chunks.removeFirst()
            firstChunkBase += Self.chunkCapacity
        }
    }

    /// The first index in `range` whose value satisfies `isAfter`, where
    /// `isAfter` is false for a prefix of the range and true for the rest
    /// (binary search; `range.upperBound` when none is).
    func partitioningIndex(in range: Range<Int>, where isAfter: (Element) -> Bool) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = low + (high - low) / 2
            if isAfter(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Bytes of slot storage currently allocated (for memory reports).
    var allocatedSlotBytes: Int {
        chunks.reduce(0) { $0 + $1.capacity * MemoryLayout<Element?>.stride }
    }
}
