import Foundation
import Synchronization

/// What every viewer of a load test has seen so far, and the running totals read from it: each
/// viewer writes its own slot as things happen; a reading brings each viewer's buffer up to now,
/// so a stall under way counts as it lasts.
public final class LoadTally: Sendable {
    struct Viewer {
        var began: ContinuousClock.Instant
        var buffer: ViewerBuffer?
        /// A decoded viewer's playback, from its own run (instead of `buffer`).
        var timeline: PlayerTimeline?
        var failed: String?
        /// When it stopped (seconds from its start): its buffer and stalls stand still from then.
        var finishedAt: Double?
        var bytes = 0
        var errors: [Int?] = []
        /// The variant followed (a multivariant playlist's), and how often it changed.
        var rendition: String?
        var switches = 0
    }

    struct State {
        var viewers: [Int: Viewer] = [:]
        /// Every segment fetch's seconds, of all viewers.
        var fetches = SecondsHistogram()
        /// The first request that failed with no HTTP status (the network, a timeout): why.
        var firstErrorWithoutStatus: String?
        /// When the test ended: viewers still stopping after it are counted as they were then,
        /// so a buffer that runs dry while its viewer winds down is not a stall.
        var ended: ContinuousClock.Instant?

        /// `time` (seconds from the viewer's start) is past the test's end.
        func isOver(_ number: Int, at time: Double) -> Bool {
            guard let ended, let began = viewers[number]?.began else { return false }
            return time > (ended - began).seconds
        }
    }

    /// What happens to a viewer, as it happens (for histograms, which a total cannot fill).
    public enum Observation: Sendable {
        /// Seconds from its start to its first frame.
        case firstFrame(Double)
        /// Seconds a segment's fetch took.
        case segmentFetch(Double)
    }

    private let state = Mutex(State())
    private let observe: (@Sendable (Observation) -> Void)?

    public init(observe: (@Sendable (Observation) -> Void)? = nil) {
        self.observe = observe
    }

    public func started(_ number: Int, at time: ContinuousClock.Instant) {
        state.withLock { $0.viewers[number] = Viewer(began: time) }
    }

    /// `httpError`: the request failed (with `status` when the server answered), not what came back.
    public func failed(_ number: Int, reason: String, httpError: Bool = true, status: Int? = nil) {
        state.withLock {
            $0.viewers[number]?.failed = reason
            if httpError { $0.viewers[number]?.errors.append(status) }
        }
    }

    /// Media came: the viewer's buffer now, and `seconds` the fetch took (a segment's; nil for a stream's).
    func fetched(_ number: Int, buffer: ViewerBuffer, seconds: Double?, bytes: Int) {
        let first = state.withLock { state -> Bool? in
            // A fetch that ends after the test's end is the viewer winding down, not the test.
            guard state.ended == nil else { return nil }
            let first = state.viewers[number]?.buffer?.firstFrame == nil
            state.viewers[number]?.buffer = buffer
            state.viewers[number]?.bytes += bytes
            if let seconds { state.fetches.record(seconds) }
            return first
        }
        guard let first else { return }
        if first, let time = buffer.firstFrame { observe?(.firstFrame(time)) }
        if let seconds { observe?(.segmentFetch(seconds)) }
    }

    /// A decoded viewer's run entered `state` at `time` (seconds from the viewer's start).
    public func decoded(_ number: Int, entered runState: RunState, at time: Double) {
        let first = state.withLock { tally -> Double? in
            guard !tally.isOver(number, at: time) else { return nil }
            var timeline = tally.viewers[number]?.timeline ?? PlayerTimeline()
            let had = timeline.firstFrame != nil
            timeline.entered(runState, at: time)
            tally.viewers[number]?.timeline = timeline
            return had ? nil : timeline.firstFrame
        }
        if let first { observe?(.firstFrame(first)) }
    }

    /// A decoded viewer's run measured how far behind live it plays.
    public func decoded(_ number: Int, latency: Double, at time: Double) {
        state.withLock { state in
            guard !state.isOver(number, at: time) else { return }
            state.viewers[number]?.timeline?.measured(latency: latency, at: time)
        }
    }

    func rendition(_ number: Int, _ rendition: String, switched: Bool) {
        state.withLock {
            $0.viewers[number]?.rendition = rendition
            if switched { $0.viewers[number]?.switches += 1 }
        }
    }

    /// A request failed: with the server's `status`, or with none (then `reason` says why).
    func trouble(_ number: Int, status: Int?, reason: String) {
        state.withLock {
            $0.viewers[number]?.errors.append(status)
            if status == nil, $0.firstErrorWithoutStatus == nil { $0.firstErrorWithoutStatus = reason }
        }
    }

    /// Why the first request that got no HTTP status failed, for the line under the summary.
    public var firstErrorWithoutStatus: String? { state.withLock(\.firstErrorWithoutStatus) }

    /// The test is over at `time`: no viewer plays, or stalls, past it.
    public func end(at time: ContinuousClock.Instant = .now) {
        state.withLock { $0.ended = $0.ended ?? time }
    }

    /// The viewer stopped: its buffer played on to now (or the test's end) first, so a stall under way is kept.
    public func finished(_ number: Int, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            let now = min(now, state.ended ?? now)
            guard let began = state.viewers[number]?.began else { return }
            let time = (now - began).seconds
            state.viewers[number]?.buffer?.advance(to: time)
            state.viewers[number]?.finishedAt = time
        }
    }

    /// The first failure's reason, for a line that says why viewers failed.
    public var firstFailure: String? {
        state.withLock { $0.viewers.sorted { $0.key < $1.key }.lazy.compactMap(\.value.failed).first }
    }

    /// The running totals at `now` (`wall` on the wall clock, for the live latency).
    public func totals(at now: ContinuousClock.Instant = .now, wall: Date = Date()) -> LoadTotals {
        state.withLock { state in
            let wall = wall.addingTimeInterval(-max(0, state.ended.map { (now - $0).seconds } ?? 0))
            let now = min(now, state.ended ?? now)
            var totals = LoadTotals()
            var firstFrames: [Double] = [], latencies: [Double] = []
            var played = 0.0
            for viewer in state.viewers.values {
                totals.started += 1
                let active = viewer.failed == nil && viewer.finishedAt == nil
                if viewer.failed != nil { totals.failed += 1 } else if active { totals.active += 1 }
                totals.bytes += viewer.bytes
                totals.renditionSwitches += viewer.switches
                if active, let rendition = viewer.rendition { totals.renditions[rendition, default: 0] += 1 }
                for status in viewer.errors {
                    totals.httpErrors += 1
                    if let status { totals.httpErrorsByStatus[status, default: 0] += 1 }
                }
                let time = viewer.finishedAt ?? (now - viewer.began).seconds
                guard let playback = Playback(viewer, at: time, wall: wall) else { continue }
                if let first = playback.firstFrame { firstFrames.append(first) }
                if active, playback.isStalled { totals.stalledNow += 1 }
                if active, playback.firstFrame != nil, !playback.isStalled { totals.playingNow += 1 }
                if active, let latency = playback.latency { latencies.append(latency) }
                totals.stalls += playback.stalls
                totals.stalledSeconds += playback.stalledSeconds
                played += playback.played
            }
            totals.firstFrame = Percentiles(firstFrames)
            totals.fetch = Percentiles(state.fetches)
            totals.liveLatencies = latencies
            totals.rebufferRatio = totals.stalledSeconds + played > 0 ? totals.stalledSeconds / (totals.stalledSeconds + played) : 0
            return totals
        }
    }
}

/// One viewer's playback at a reading, whichever kind of viewer: a simulated player's buffer
/// brought up to the reading, or a decoded viewer's own run.
private struct Playback {
    var firstFrame: Double?
    var isStalled: Bool
    var stalls: Int
    var stalledSeconds: Double
    var played: Double
    var latency: Double?

    init?(_ viewer: LoadTally.Viewer, at time: Double, wall: Date) {
        if let timeline = viewer.timeline {
            (firstFrame, isStalled, stalls) = (timeline.firstFrame, timeline.isStalled, timeline.stalls)
            (stalledSeconds, played, latency) = (timeline.stalledSeconds(at: time), timeline.played(at: time), timeline.latency(at: time))
        } else if var buffer = viewer.buffer {
            buffer.advance(to: time)
            (firstFrame, isStalled, stalls) = (buffer.firstFrame, buffer.isStalled, buffer.stalls)
            (stalledSeconds, played) = (buffer.stalledSeconds(at: time), buffer.played)
            latency = buffer.programDateTime.map { wall.timeIntervalSince($0) }
        } else {
            return nil
        }
    }
}
