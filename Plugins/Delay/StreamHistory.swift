/// One held unit without its stream number (the stream is implied by which
/// history holds it). Kept small on purpose: it is stored once per unit, and
/// an hour of AAC is ~170,000 units. With a `ByteSlice` payload it is 32 bytes
/// (its optional too: the slice's class reference leaves room for the nil).
struct StoredUnit<Payload> {
    var pts: UInt64
    var payload: Payload
    /// Nanoseconds; 0 when unknown or longer than 32 bits hold (4.29 s).
    private var storedDuration: UInt32
    /// The byte size in the low 31 bits, the keyframe flag in the top bit.
    private var sizeAndKeyframe: UInt32

    init(pts: UInt64, duration: UInt64, payload: Payload, byteSize: UInt32, isKeyframe: Bool) {
        self.pts = pts
        self.payload = payload
        storedDuration = duration <= UInt64(UInt32.max) ? UInt32(duration) : 0
        sizeAndKeyframe = min(byteSize, 0x7FFF_FFFF) | (isKeyframe ? 0x8000_0000 : 0)
    }

    var duration: UInt64 { UInt64(storedDuration) }
    var byteSize: UInt32 { sizeAndKeyframe & 0x7FFF_FFFF }
    var isKeyframe: Bool { sizeAndKeyframe & 0x8000_0000 != 0 }
}

/// The held units of one stream, oldest first, with a keyframe index.
struct StreamHistory<Payload> {
    var units = ChunkedDeque<StoredUnit<Payload>>()
    /// Absolute unit indexes of the held keyframes, oldest first. Only kept
    /// once the stream has shown a non-keyframe: for audio every unit is a
    /// keyframe, and an index of every unit would cost 16 bytes a unit for nothing.
    private var keyframes = ChunkedDeque<Int>()
    private(set) var everyUnitIsKeyframe = true

    var newestPTS: UInt64? { units.isEmpty ? nil : units[units.endIndex - 1].pts }

    /// Appends a unit; false (and nothing held) when its pts is earlier than
    /// the stream's newest, because every lookup here binary-searches by pts.
    mutating func append(_ unit: StoredUnit<Payload>) -> Bool {
        if let newest = newestPTS, unit.pts < newest { return false }
        if !unit.isKeyframe && everyUnitIsKeyframe {
            // First non-keyframe: from now on keyframes need their own index,
            // and every unit held so far is one.
            everyUnitIsKeyframe = false
            for index in units.startIndex..<units.endIndex { keyframes.append(index) }
        }
        if unit.isKeyframe && !everyUnitIsKeyframe { keyframes.append(units.endIndex) }
        units.append(unit)
        return true
    }

    /// The oldest held keyframe: where play-out of this stream can start.
    var firstKeyframeIndex: Int? {
        if everyUnitIsKeyframe { return units.isEmpty ? nil : units.startIndex }
        return keyframes.isEmpty ? nil : keyframes[keyframes.startIndex]
    }

    /// The newest keyframe at or before the unit at `unitIndex`.
    func keyframeIndex(atOrBefore unitIndex: Int) -> Int? {
        guard unitIndex >= units.startIndex, unitIndex < units.endIndex else { return nil }
        if everyUnitIsKeyframe { return unitIndex }
        let after = keyframes.partitioningIndex(in: keyframes.startIndex..<keyframes.endIndex) { $0 > unitIndex }
        return after > keyframes.startIndex ? keyframes[after - 1] : nil
    }

    /// The first held unit with pts after `pts` (`units.endIndex` when none).
    func firstIndex(after pts: UInt64) -> Int {
        units.partitioningIndex(in: units.startIndex..<units.endIndex) { $0.pts > pts }
    }

    /// The pts of the first keyframe after `pts`, if one is held yet.
    func keyframe(after pts: UInt64) -> UInt64? {
        var index = firstIndex(after: pts)
        while index < units.endIndex {
            if units[index].isKeyframe { return units[index].pts }
            index += 1
        }
        return nil
    }

    /// The newest keyframe with pts at or before `pts`.
    func keyframeIndex(atOrBefore pts: UInt64) -> Int? {
        keyframeIndex(atOrBefore: firstIndex(after: pts) - 1)
    }

    /// Where play-out resumes when everything up to `target` counts as played:
    /// the first unit after `target`, unless that unit cannot be decoded on its
    /// own; then the keyframe at or before `target`, so the decoder gets the
    /// whole group (the units up to `target` are decode-only preroll).
    func resumeIndex(after target: UInt64) -> Int {
        let first = firstIndex(after: target)
        if everyUnitIsKeyframe { return first }
        if first < units.endIndex, units[first].isKeyframe { return first }
        // `first` is a non-keyframe, or not here yet (and may be one when it
        // comes): start from the group that is playing at `target`.
        return keyframeIndex(atOrBefore: first - 1) ?? first
    }

    /// Evicts what play-out can no longer need when nothing earlier than
    /// `cutoff` may be asked for: everything before the newest keyframe at or
    /// before `cutoff`, so the stream always starts with a keyframe and a
    /// seek to `cutoff` still finds the group playing at that moment.
    /// Returns the bytes evicted.
    mutating func evict(before cutoff: UInt64) -> Int {
        let keepFrom: Int
        if everyUnitIsKeyframe {
            var index = units.startIndex
            while index + 1 < units.endIndex, units[index + 1].pts <= cutoff { index += 1 }
            keepFrom = index
        } else {
            while keyframes.count >= 2, units[keyframes[keyframes.startIndex + 1]].pts <= cutoff {
                keyframes.removeFirst(1)
            }
            if let first = firstKeyframeIndex, units[first].pts <= cutoff {
                keepFrom = first
            } else {
                // No keyframe old enough: only units before the first keyframe
                // (undecodable leftovers from joining mid-group) can go, once old.
                let limit = firstKeyframeIndex ?? units.endIndex
                var index = units.startIndex
                while index < limit, units[index].pts < cutoff { index += 1 }
                keepFrom = index
            }
        }
        var bytes = 0
        for index in units.startIndex..<keepFrom { bytes += Int(units[index].byteSize) }
        units.removeFirst(keepFrom - units.startIndex)
        return bytes
    }

    var allocatedBytes: Int { units.allocatedSlotBytes + keyframes.allocatedSlotBytes }
}
