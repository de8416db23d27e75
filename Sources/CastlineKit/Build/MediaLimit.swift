import GstKit
import Synchronization

/// `--duration` as media: each stream ends once it has passed that much media where what plays
/// leaves the chain (the source, or the last time-shift), so every stage from there sees the end,
/// and each sink input ends there too, so a 10 s recording holds 10 s whatever was still in
/// flight. Counted on one time line for every input (running time from the first buffer of any):
/// a stream that starts later (an HLS audio rendition a segment behind its video) ends with the
/// others. After a swap only the sink inputs count (the chain's outputs may have moved).
public final class MediaLimit: Sendable {
    private let limit = Mutex<UInt64?>(nil)
    private let start = Mutex<UInt64?>(nil)
    private let reached = Atomic<Bool>(false)
    /// A stream has been ended where it leaves the chain: the ends come down from there, and sink
    /// inputs let pass what an encoder still drains after it (its last frames may be stamped past the limit).
    private let chainEnded = Atomic<Bool>(false)
    /// A swap was applied: the chain's outputs may have moved (a delay added after them), so only
    /// the sink inputs end the streams from then on, as they count on.
    private let swapped = Atomic<Bool>(false)

    /// Where a watch sits: where what plays leaves the chain (the source, or a time-shift), ending
    /// the streams of every stage after it; or a sink's input.
    enum Place { case chainOutput, sinkInput }

    /// A swap is being applied: the sink inputs alone end the streams from now on.
    public func swapApplied() { swapped.store(true, ordering: .relaxed) }

    /// Some input has passed the limit: the run is ending.
    public var isReached: Bool { reached.load(ordering: .relaxed) }

    public init() {}

    public func set(_ duration: Duration) {
        limit.withLock { $0 = ClockTime(duration).nanoseconds }
    }

    /// Ends the stream through `pad` (from its streaming thread) once the limit is reached.
    func watch(_ pad: Pad, at place: Place) {
        let passed = Mutex(MediaCount())
        let ended = OnceFlag()
        pad.addProbe(.buffer) { [weak self] info in
            // Past the end, what upstream still sends meets the end at the peer, which answers it
            // with end-of-stream: upstream stops there.
            guard !ended.isTripped, let self, let buffer = info.buffer, let pts = buffer.pts,
                  let limit = self.limit.withLock({ $0 }) else { return .ok }
            let swapped = self.swapped.load(ordering: .relaxed)
            if place == .chainOutput, swapped { return .ok }
            if place == .sinkInput, !swapped, self.chainEnded.load(ordering: .relaxed) { return .ok }
            // Running time, one time line for every input; a unit before its segment's start (a
            // leading B-frame of an open GOP, an encoder's first frames) is taken as at the start.
            guard let segment = info.pad?.stickySegment else { return .ok }
            let segmentStart = ClockTime(nanoseconds: (segment.start?.nanoseconds ?? 0) &+ (segment.offset?.nanoseconds ?? 0))
            guard let time = (segment.runningTime(of: pts) ?? segment.runningTime(of: segmentStart))?.nanoseconds else { return .ok }
            let start = self.start.withLock { start in start ?? { start = time; return time }() }
            let counted = passed.withLock { $0.add(pts: time, duration: buffer.duration?.nanoseconds, start: start) }
            guard counted >= limit else { return .ok }
            // Sent into the peer, not pushed from this pad: a pad that has had its end refuses the sticky
            // events upstream still sends (a decoder's tags) before any probe sees them, which upstream
            // takes as an error; the peer answers them, and buffers, with end-of-stream.
            if ended.trip() {
                self.reached.store(true, ordering: .relaxed)
                if place == .chainOutput { self.chainEnded.store(true, ordering: .relaxed) }
                _ = info.pad?.peer?.sendEvent(.endOfStream())
            }
            return .drop
        }
    }
}

/// How much media one stream has passed: the span of its timestamps, less any jump longer
/// than `gap`. A live source that sent nothing for a while (an HLS outage, a stalled SRT
/// link, a pause) comes back with timestamps past the time it missed; that time is not media.
/// A stream whose units all come that far apart (a slide every 5 s) has that as its cadence:
/// a step like the one before it is media.
struct MediaCount {
    /// Longer than any frame interval castline meets (a still screen share sends a frame a
    /// second or two), shorter than an outage (an HLS segment, WHEP's 5 s without media).
    static let gap: UInt64 = 3_000_000_000
    private var highest: UInt64?
    /// The last step forward longer than `gap`, and how many such steps alike have come in a row.
    private var longStep: UInt64?
    private var alikeSteps = 0
    /// What those long steps left uncounted, counted once enough alike in a row show they were the
    /// stream's cadence: two for a stream that never stepped shorter, three for one that did (a
    /// steady stream's outages are long steps amid short ones).
    private var uncounted: UInt64 = 0
    private var steppedShort = false
    private(set) var counted: UInt64 = 0

    /// `start`: where every stream's time line begins; a stream's first unit counts from there
    /// (nil: from itself).
    mutating func add(pts: UInt64, duration: UInt64?, start: UInt64? = nil) -> UInt64 {
        guard let last = highest else {
            highest = pts
            counted = start.map { pts > $0 ? pts - $0 : 0 } ?? 0
            return counted
        }
        if pts > last, pts - last <= Self.gap {
            counted += pts - last
            highest = pts
            (longStep, alikeSteps, uncounted, steppedShort) = (nil, 0, 0, true)
        } else if pts > last &+ Self.gap {
            let step = pts - last
            let alike = longStep.map { Self.alike(step, $0) } ?? false
            alikeSteps = alike ? alikeSteps + 1 : 1
            if !alike { uncounted = 0 }
            longStep = step
            highest = pts
            if alikeSteps >= (steppedShort ? 3 : 2) {
                counted += step + uncounted
                (uncounted, steppedShort) = (0, false)
            } else {
                // Maybe an outage: only this unit's own length counts, for now.
                counted += duration ?? 0
                uncounted += step - min(step, duration ?? 0)
            }
        } else if last > pts &+ Self.gap {
            // A jump back starts a new span; only this unit's own length counts.
            counted += duration ?? 0
            highest = pts
            (longStep, alikeSteps, uncounted) = (nil, 0, 0)
        }
        // A small step back is a reordered frame: it is counted as the stream moves past it.
        return counted
    }

    /// Two long steps within a quarter of each other: a cadence, not an outage and its return.
    private static func alike(_ a: UInt64, _ b: UInt64) -> Bool {
        max(a, b) - min(a, b) <= max(a, b) / 4
    }
}

extension Pad {
    /// Ends a stream nobody takes without a sink element, which would otherwise
    /// have to see end-of-stream before the pipeline can finish.
    func discardData() {
        addProbe([.buffer, .bufferList]) { _ in .drop }
    }
}
