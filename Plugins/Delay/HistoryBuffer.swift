import Synchronization

/// One unit of encoded media as it arrived.
public struct MediaUnit<Payload: Sendable>: Sendable {
    /// Small stream index (0 audio, 1 video: the stage decides).
    public var stream: Int
    /// Nanoseconds of running time, non-decreasing per stream. For video with
    /// B-frames pass the decode time here (and keep the real pts in the payload).
    public var pts: UInt64
    /// Nanoseconds; 0 when unknown.
    public var duration: UInt64
    /// Audio units are all keyframes.
    public var isKeyframe: Bool
    public var payload: Payload

    public init(stream: Int, pts: UInt64, duration: UInt64 = 0, isKeyframe: Bool = true, payload: Payload) {
        self.stream = stream
        self.pts = pts
        self.duration = duration
        self.isKeyframe = isKeyframe
        self.payload = payload
    }
}

/// A play-out position `delay` behind the newest media. A value the stage
/// keeps and passes back to `due` and `seek`; it holds absolute unit indexes,
/// which stay valid while the buffer evicts.
public struct HistoryCursor: Sendable {
    /// The delay applied (after clamping to what was available).
    public internal(set) var delay: Duration
    /// The pts play-out has reached: units with pts at or before it have been
    /// handed out (or skipped by a seek). Right after a seek this is the jump
    /// target; video units `due` then returns with pts at or before it are
    /// decode-only preroll from the keyframe before the target. Nil until the
    /// buffer has held media.
    public internal(set) var position: UInt64?
    /// Per stream, the absolute index of the next unit to hand out; nil for a
    /// stream this cursor has not started yet.
    var nextIndex: [Int?] = []
}

/// The last `maxDuration` of encoded media as it arrived, per stream, with
/// play-out cursors that run a chosen delay behind the newest media.
///
/// Thread-safe: the stage appends from its streaming thread and hands out from
/// its play-out thread; every call takes one lock for O(units it touches).
public final class HistoryBuffer<Payload: Sendable>: Sendable {
    public typealias Cursor = HistoryCursor

    private let state: Mutex<HistoryState<Payload>>

    public init(maxDuration: Duration) {
        state = Mutex(HistoryState(maxNanoseconds: nanoseconds(of: maxDuration)))
    }

    /// The most media kept.
    public var maxDuration: Duration { .nanoseconds(Int64(clamping: state.withLock(\.maxNanoseconds))) }

    /// Keeps `maxDuration` from now on (less: the oldest goes with the next unit held).
    public func resize(to maxDuration: Duration) {
        state.withLock { $0.maxNanoseconds = nanoseconds(of: maxDuration) }
    }

    /// Holds `unit` (counting `byteSize` bytes for it) and evicts what is older
    /// than the newest media minus `maxDuration`, keeping every stream starting
    /// at a keyframe. Returns false, holding nothing, when the unit's pts is
    /// earlier than its stream's newest (histories are searched by pts).
    @discardableResult
    public func append(_ unit: MediaUnit<Payload>, byteSize: Int) -> Bool {
        precondition(unit.stream >= 0 && unit.stream < 64, "stream index \(unit.stream) is not a small index")
        precondition(byteSize >= 0, "byte size \(byteSize) is negative")
        return state.withLock { $0.append(unit, byteSize: byteSize) }
    }

    /// The newest pts over all streams.
    public var newest: UInt64? { state.withLock { $0.newest } }

    /// How far back play-out can go now: from the newest media to the oldest
    /// point every stream can start from (for video its oldest keyframe), at
    /// most `maxDuration`. Grows from 0 after start up to `maxDuration`.
    public var available: Duration { state.withLock { .nanoseconds(Int64(clamping: $0.availableNanoseconds)) } }

    /// The oldest point every stream can start from (what `available` reaches back to); nil while nothing is held.
    public var earliest: UInt64? { state.withLock { state in state.newest.map { $0 - state.availableNanoseconds } } }

    /// Bytes held: the sum of `byteSize` over held units.
    public var byteCount: Int { state.withLock { $0.byteCount } }
    public var unitCount: Int { state.withLock { $0.unitCount } }

    /// Bytes of per-unit bookkeeping allocated (slot storage of the rings),
    /// on top of `byteCount`; payload objects' own overhead is not counted.
    public var bookkeepingBytes: Int { state.withLock { $0.streams.reduce(0) { $0 + $1.allocatedBytes } } }

    /// A play-out cursor `delay` behind the newest media, clamped to `available`.
    public func cursor(delay: Duration) -> Cursor {
        var cursor = Cursor(delay: .zero, position: nil)
        seek(&cursor, toDelay: delay)
        return cursor
    }

    /// Units due for play-out now: those with pts at or before newest - delay
    /// (and at or before `through`, when given) not yet handed out by this
    /// cursor, each once, merged in pts order across streams (ties: lower
    /// stream first). Costs O(units returned).
    public func due(_ cursor: inout Cursor, through: UInt64? = nil) -> [MediaUnit<Payload>] {
        state.withLock { state in
            defer { state.pin(cursor) }
            return state.due(&cursor, through: through)
        }
    }

    /// The pts of the next unit the cursor would hand out, across streams; nil when none is held yet.
    public func nextPTS(_ cursor: Cursor) -> UInt64? {
        state.withLock { $0.nextPTS(cursor) }
    }

    /// Whether the cursor has handed out every unit held (nothing is left to play).
    public func isCaughtUp(_ cursor: Cursor) -> Bool {
        state.withLock { state in
            state.streams.indices.allSatisfy { stream in
                guard stream < cursor.nextIndex.count, let next = cursor.nextIndex[stream] else {
                    return state.streams[stream].units.isEmpty
                }
                return next >= state.streams[stream].units.endIndex
            }
        }
    }

    /// Moves the cursor to a new delay: further back re-plays history, nearer
    /// skips ahead. Audio resumes at the first unit after the target; video at
    /// the keyframe at or before it. Returns the delay applied (clamped to
    /// 0...available) and what was available.
    @discardableResult
    public func seek(_ cursor: inout Cursor, toDelay delay: Duration) -> (applied: Duration, available: Duration) {
        state.withLock { state in
            defer { state.pin(cursor) }
            return state.seek(&cursor, toDelay: delay)
        }
    }

    /// Moves the cursor to a play-out position: units with pts at or before
    /// `position` count as played. Clamped to what is held: before the point
    /// every stream can start from, play starts there; past the newest unit,
    /// it waits for what comes next. Returns the position applied (nil while
    /// nothing is held). The cursor's delay is 0: units are due once they have
    /// arrived and `due(_:through:)` says their time has come.
    @discardableResult
    public func seek(_ cursor: inout Cursor, toPosition position: UInt64) -> UInt64? {
        state.withLock { state in
            defer { state.pin(cursor) }
            return state.seek(&cursor, toPosition: position)
        }
    }

    /// Moves the cursor near `target`, to where every stream really resumes (video at a
    /// keyframe), and returns the pts of the first unit it hands out: nothing before it goes,
    /// so a play-out move keyed to it neither repeats nor overlaps what already went out (a
    /// recording of encoded video can only go on from a keyframe). Moving on from `current`, a
    /// target whose group began at or before `current` goes on from the next keyframe after
    /// it instead (nil, the cursor as it was, while none is held yet).
    public func seekToResumePoint(_ cursor: inout Cursor, near target: UInt64, from current: UInt64? = nil) -> UInt64? {
        state.withLock { state in
            var trial = cursor
            guard let moved = state.seek(&trial, toPosition: target) else { return nil }
            var resume = min(moved, state.nextPTS(trial) ?? moved)
            if resume < moved {
                _ = state.seek(&trial, toPosition: resume)
                resume = min(resume, state.nextPTS(trial) ?? resume)
            }
            if let current, target > current, resume <= current {
                let next = state.streams.filter { !$0.everyUnitIsKeyframe }.compactMap { $0.keyframe(after: target) }.max()
                guard let next else { return nil }
                trial = cursor
                _ = state.seek(&trial, toPosition: next - 1)
                resume = min(next, state.nextPTS(trial) ?? next)
            }
            cursor = trial
            state.pin(cursor)
            return resume
        }
    }

    /// The pts of the newest keyframe of `stream` at or before `pts`.
    public func keyframe(atOrBefore pts: UInt64, stream: Int) -> UInt64? {
        state.withLock { state in
            guard state.streams.indices.contains(stream),
                  let index = state.streams[stream].keyframeIndex(atOrBefore: pts) else { return nil }
            return state.streams[stream].units[index].pts
        }
    }
}

extension HistoryBuffer {
    /// The oldest held unit of `stream`: its pts and whether it is a keyframe (for tests and reports).
    func oldestHeld(stream: Int) -> (pts: UInt64, isKeyframe: Bool)? {
        state.withLock { state in
            guard state.streams.indices.contains(stream), !state.streams[stream].units.isEmpty else { return nil }
            let unit = state.streams[stream].units[state.streams[stream].units.startIndex]
            return (unit.pts, unit.isKeyframe)
        }
    }
}

/// Nanoseconds of a duration, negative ones as 0, huge ones saturated.
func nanoseconds(of duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
    let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return .max }
    let (total, overflowAgain) = whole.addingReportingOverflow(UInt64(max(0, attoseconds / 1_000_000_000)))
    return overflowAgain ? .max : total
}

/// The lock-protected state of a `HistoryBuffer`.
struct HistoryState<Payload: Sendable> {
    /// How far past `maxNanoseconds` what play-out has still to play is kept (see `pin`).
    static var slackNanoseconds: UInt64 { 10_000_000_000 }

    var maxNanoseconds: UInt64
    /// The oldest pts play-out has still to play: not evicted, up to `slackNanoseconds` past the max.
    private(set) var keepFrom: UInt64?
    var streams: [StreamHistory<Payload>] = []
    private(set) var newest: UInt64?
    private(set) var byteCount = 0

    init(maxNanoseconds: UInt64) { self.maxNanoseconds = maxNanoseconds }

    var unitCount: Int { streams.reduce(0) { $0 + $1.units.count } }

    mutating func append(_ unit: MediaUnit<Payload>, byteSize: Int) -> Bool {
        while streams.count <= unit.stream { streams.append(StreamHistory()) }
        let stored = StoredUnit(pts: unit.pts, duration: unit.duration, payload: unit.payload,
                                byteSize: UInt32(clamping: byteSize), isKeyframe: unit.isKeyframe)
        guard streams[unit.stream].append(stored) else { return false }
        byteCount += Int(stored.byteSize)
        newest = max(newest ?? unit.pts, unit.pts)
        guard let newest, newest > maxNanoseconds else { return true }
        // Every stream, not only this one: a newer unit anywhere moves the
        // window for all (and the checks are O(1) when nothing is due to go).
        var cutoff = newest - maxNanoseconds
        if let keepFrom, keepFrom < cutoff { cutoff = max(keepFrom, cutoff - min(cutoff, Self.slackNanoseconds)) }
        for index in streams.indices { byteCount -= streams[index].evict(before: cutoff) }
        return true
    }

    /// Play-out's cursor is at `cursor`: what it has still to play is kept past the max (by at
    /// most the slack). A move back to the oldest held, or a delay at the max, would otherwise
    /// have each segment's worth of media, arriving at once, evict what play-out was about to
    /// play: nothing would ever come due. Paused, play-out falls behind by the slack at most.
    mutating func pin(_ cursor: HistoryCursor) {
        keepFrom = [cursor.position, nextPTS(cursor)].compactMap { $0 }.min()
    }

    /// The latest of the streams' earliest starts, each its keyframe playing at the max's edge (or
    /// its first, when newer): every stream can start there. What `pin` keeps older than that is
    /// for play-out already there, not to move to.
    var earliestStart: UInt64? {
        let edge = newest.map { $0 - min($0, maxNanoseconds) } ?? 0
        return streams.compactMap { history -> UInt64? in
            guard let first = history.firstKeyframeIndex else { return nil }
            let start = history.keyframeIndex(atOrBefore: edge) ?? first
            return history.units[max(start, first)].pts
        }.max()
    }

    var availableNanoseconds: UInt64 {
        guard let newest, let start = earliestStart, start <= newest else { return 0 }
        return min(newest - start, maxNanoseconds)
    }

    mutating func seek(_ cursor: inout HistoryCursor, toPosition target: UInt64) -> UInt64? {
        cursor.delay = .zero
        guard let newest, let start = earliestStart else {
            cursor.position = nil
            cursor.nextIndex = []
            return nil
        }
        let position = min(max(target, start), newest)
        cursor.position = position
        // Before the start: every stream from its first keyframe (the unit at `start` included).
        cursor.nextIndex = streams.map { history in
            target < start ? history.firstKeyframeIndex ?? history.units.startIndex : history.resumeIndex(after: position)
        }
        return position
    }

    mutating func seek(_ cursor: inout HistoryCursor, toDelay delay: Duration) -> (applied: Duration, available: Duration) {
        let available = availableNanoseconds
        let applied = min(nanoseconds(of: delay), available)
        cursor.delay = .nanoseconds(Int64(clamping: applied))
        if let newest {
            let target = newest - applied
            cursor.position = target
            cursor.nextIndex = streams.map { $0.resumeIndex(after: target) }
        } else {
            cursor.position = nil
            cursor.nextIndex = []
        }
        return (cursor.delay, .nanoseconds(Int64(clamping: available)))
    }

    func nextPTS(_ cursor: HistoryCursor) -> UInt64? {
        streams.enumerated().compactMap { stream, history -> UInt64? in
            let next: Int
            if stream < cursor.nextIndex.count, let index = cursor.nextIndex[stream] {
                next = max(index, history.units.startIndex)
            } else if let position = cursor.position {
                next = history.resumeIndex(after: position)
            } else {
                next = history.units.startIndex
            }
            return next < history.units.endIndex ? history.units[next].pts : nil
        }.min()
    }

    mutating func due(_ cursor: inout HistoryCursor, through: UInt64? = nil) -> [MediaUnit<Payload>] {
        guard let newest else { return [] }
        let behindNewest = newest - min(nanoseconds(of: cursor.delay), newest)
        let limit = through.map { min($0, behindNewest) } ?? behindNewest
        // Per stream, the run of units now due: from the cursor's next unit up
        // to the last with pts <= limit. Walking (not searching) keeps this
        // O(units handed out); pts are non-decreasing within a stream.
        var runs: [Range<Int>] = []
        runs.reserveCapacity(streams.count)
        for (stream, history) in streams.enumerated() {
            let start: Int
            if stream < cursor.nextIndex.count, let next = cursor.nextIndex[stream] {
                start = next
            } else if let position = cursor.position {
                // A stream that appeared after this cursor last looked.
                start = history.resumeIndex(after: position)
            } else {
                start = history.units.startIndex
            }
            // The stage fell behind further than the history reaches: what is
            // evicted is gone; continue from the oldest held.
            var end = max(start, history.units.startIndex)
            let from = end
            while end < history.units.endIndex, history.units[end].pts <= limit { end += 1 }
            runs.append(from..<end)
        }
        cursor.nextIndex = runs.map { $0.upperBound }
        cursor.position = limit
        return merged(runs)
    }

    /// The units of `runs` (one per stream) in pts order; ties go to the lower
    /// stream so audio and video at the same instant come out in a fixed order.
    private func merged(_ runs: [Range<Int>]) -> [MediaUnit<Payload>] {
        var units: [MediaUnit<Payload>] = []
        units.reserveCapacity(runs.reduce(0) { $0 + $1.count })
        var heads = runs.map(\.lowerBound)
        while true {
            // Streams are few (audio, video), so a linear pick beats a heap.
            var pick: Int?
            var pickPTS = UInt64.max
            for stream in heads.indices where heads[stream] < runs[stream].upperBound {
                let pts = streams[stream].units[heads[stream]].pts
                if pick == nil || pts < pickPTS { pick = stream; pickPTS = pts }
            }
            guard let stream = pick else { return units }
            let stored = streams[stream].units[heads[stream]]
            units.append(MediaUnit(stream: stream, pts: stored.pts, duration: stored.duration,
                                   isKeyframe: stored.isKeyframe, payload: stored.payload))
            heads[stream] += 1
        }
    }
}
