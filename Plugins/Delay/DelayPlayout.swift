// The play-out's one State under one lock and the queue that pushes what is due; how it
// starts is in +Start, delay moves and pauses in +Moves, what it reports in +Reports.
import CastlineKit
import Foundation
import Synchronization

/// The play-out of a delay stage: units go into the history as they arrive
/// (timed by running time), and come out `delay` later on the same time line.
///
/// A unit with running time t plays at t + delay. It is handed to the appsrc
/// `lead` before then, by the pipeline clock, so the decoder and sink have it
/// in time and the appsrc never holds more than `lead` of media (a source
/// faster than real time, such as a file, would otherwise pile the whole
/// history up there a second time, as GStreamer buffers). A change of delay
/// moves the play-out position by the change: the units that follow carry
/// t + new delay, which continues the time line (further back: t is smaller by
/// the change), so the sinks see no gap and no overlap, only a discontinuity
/// in content.
///
/// An HLS source that started `startBack` earlier in its playlist (see
/// `SourceTimingEvents`) has put that much delay into the timestamps already;
/// only the rest is added.
///
/// A live HLS source also estimates the stream's live edge (`LiveEdgeWatch`).
/// Then t plays `hold-back` + delay behind the edge instead (`LiveAnchor`), the
/// same for every listener however late it started; play-out waits for that
/// estimate (up to `liveEdgeWait`, then anchors as above and says so).
/// How it starts (the initial delay held, the live-edge anchor) is in DelayPlayout+Start.swift;
/// what it reports (the delay available, its stats, the stream time it plays) in
/// DelayPlayout+Reports.swift.
final class DelayPlayout: Sendable {
    static let lead: Duration = .milliseconds(200)
    /// The longest a stream waits for a keyframe after units it could not play (ns of its time).
    static let keyframeWait: UInt64 = 10_000_000_000
    /// How long play-out waits for a promised live-edge estimate.
    static let liveEdgeWait: Duration = .seconds(10)
    /// How long the unit due at the start may be missing before play-out starts later than the estimate says.
    static let dueWait: Duration = .seconds(1)
    /// Before play-out starts, how often it looks at the clock when no media arrives (the
    /// start waits on the clock as well as on what is held); well under `lead`.
    static let startCheck: Duration = .milliseconds(20)
    /// How often the stage reports its figures.
    static let reportEvery: Duration = .seconds(1)

    struct State {
        var requested: Duration
        /// The delay last set by value, while what it applied is in force: set again, it changes
        /// nothing (a keyframe made the delay in force differ from it, and a new move would jump again).
        var lastSet: Duration?
        /// The delay in force; nil until the initial delay is held.
        var applied: Duration?
        /// How much earlier than a player would the source started (HLS start-back), in ns.
        var startBack: UInt64 = 0
        /// How much later than the stream's own the source stamped its media, in ns (negative: earlier).
        var restamped: Int64 = 0
        /// The source said how it stamped its media (`sourceStartedBack`): its own time is taken from that.
        var stampingOffered = false
        /// The source promised a live-edge estimate: play-out waits for it until then.
        var liveEdgeDeadline: ContinuousClock.Instant?
        /// The newest estimate, and the one the anchor was worked out from.
        var liveEdge: SourceTimingEvents.LiveEdge?
        var anchoredEdge: SourceTimingEvents.LiveEdge?
        /// What output timestamps add to running time at delay 0, from the live edge (fixed once playing).
        var liveAnchor: Int64?
        /// Since when the unit due at the start has not been held.
        var dueMissingSince: ContinuousClock.Instant?
        /// Each stream's appsink, to take the media earlier when the live edge asks for it.
        var inputs: [Element] = []
        var cursor: HistoryCursor?
        var outputs: [AppSrc] = []
        var ended: Set<Int> = []
        /// The next unit out of each stream is the first after a jump.
        var discont: Set<Int> = []
        /// Streams whose units due were not played (before the time line), by the first one's pts:
        /// they go on from a keyframe.
        var awaitingKeyframe: [Int: UInt64] = [:]
        var reportedAvailable: Duration = .zero
        var reportedAt: ContinuousClock.Instant?
        var statsAt: ContinuousClock.Instant?
        var bufferingPercent = -1
        /// Every stream ended: what is held still plays, then every output ends.
        var draining = false
        var finished = false
        /// Wakes play-out when the next unit held is due by the clock, or the next report; armed
        /// once media has come, until the outputs end.
        var wake: (any DispatchSourceTimer)?
        /// The newest unit handed out: its stream and the running time its media ends.
        var playedThrough: (stream: Int, end: UInt64)?
        /// Where what has gone out ends on the output's time line, in ns: a B-frame shows
        /// after later-decoded units, so this is the most of any unit's presentation end.
        var outputEnd: Int64?
        /// Play-out is held (the run is paused) since then; what arrives is still kept.
        var pausedSince: ContinuousClock.Instant?
        /// A move nearer live asked for while no keyframe past its target was held: made when one comes.
        var waitingMove: Duration?

        /// How long play-out has been held, in ns (0 while it plays).
        func pausedFor(at now: ContinuousClock.Instant) -> Int64 {
            pausedSince.map { (now - $0).totalNanoseconds } ?? 0
        }

        /// What output timestamps add to running time: the delay not already in the media
        /// (or, from a live edge, delay 0's anchor plus the delay).
        var shift: Int64? { applied.map { $0.totalNanoseconds + anchor } }
        var anchor: Int64 { liveAnchor ?? -Int64(clamping: startBack) }
    }

    let history: HistoryBuffer<HeldSample>
    let events: EventEmitter
    /// The stage's name, for its stats samples.
    let name: String
    let state: Mutex<State>
    /// One arena per stream, in stream order (eviction frees whole chunks).
    private let arenas = Mutex<[ByteArenaBox]>([])
    /// Each stream's own PTS against running time, for the position played out.
    let timeline = SourceTimeline()
    /// Where units are handed to the appsrcs and the outputs ended: one at a time, in order,
    /// with no lock held (a push may wait on a full appsrc), off the streaming threads and
    /// off the cooperative pool. The clock wakes it here too (see `armWake`).
    private let playout = DispatchQueue(label: "castline.delay-playout")

    /// Where the hold (`State.shift`) is told to the source's figures.
    let playoutHold: PlayoutHold

    init(initial: Duration, max: Duration, name: String, events: EventEmitter, playoutHold: PlayoutHold = PlayoutHold()) {
        history = HistoryBuffer(maxDuration: max)
        self.name = name
        self.events = events
        self.playoutHold = playoutHold
        state = Mutex(State(requested: initial))
    }

    var requested: Duration { state.withLock(\.requested) }

    /// A stream's input (its appsink) and output; returns its index in the history.
    func register(input: Element, output: AppSrc, stream: StreamKind) -> Int {
        arenas.withLock { $0.append(ByteArenaBox()) }
        return state.withLock { state in
            state.inputs.append(input)
            state.outputs.append(output)
            return state.outputs.count - 1
        }
    }

    /// The source started `startBack` ns earlier than a player would, its
    /// stream time `restamped` ns later than the stream's own timestamps (only before play-out starts);
    /// `liveEdge`: it will estimate the live edge.
    func sourceStartedBack(_ startBack: UInt64, restamped: Int64, liveEdge: Bool) {
        state.withLock { state in
            guard state.applied == nil else { return }
            state.startBack = startBack
            state.restamped = restamped
            state.stampingOffered = true
            if liveEdge, state.liveEdgeDeadline == nil { state.liveEdgeDeadline = .now + Self.liveEdgeWait }
        }
    }

    /// The source's newest live-edge estimate: taken until play-out starts (then the anchor stays, so play-out never jumps).
    func liveEdgeEstimated(_ edge: SourceTimingEvents.LiveEdge) {
        state.withLock { state in
            guard state.cursor == nil else { return }
            state.liveEdge = edge
        }
    }

    /// A unit arrived on `stream`: held, then whatever is due goes out.
    func arrived(_ sample: Sample, stream: Int) {
        guard let pts = sample.runningTime.pts else { return }
        // Held and played in decode order: a B-frame's presentation time runs back, and the
        // history keeps each stream in a time that never does (it drops what would go back).
        var reorder: UInt64 = 0
        if let shown = sample.pts?.nanoseconds, let decoded = sample.dts?.nanoseconds, shown > decoded { reorder = shown - decoded }
        let decodeTime = pts.nanoseconds > reorder ? pts.nanoseconds - reorder : 0
        let output = state.withLock { $0.outputs[stream] }
        if let caps = sample.caps, output.caps != caps {
            output.caps = caps
        }
        let slice = sample.withUnsafeBytes { bytes in
            arenas.withLock { $0[stream].arena.store(bytes) }
        }
        guard let slice else { return }
        // In GStreamer's stream time, which leaves out an encoder's 1000-hour offset; a source that
        // said how its stream time lies against the stream's own (HLS: its MPEG-TS PTS) is taken at its word.
        if let here = sample.streamTime?.nanoseconds {
            let (restamped, offered) = state.withLock { ($0.restamped, $0.stampingOffered) }
            let streamPTS = offered ? UInt64(clamping: max(0, Int64(clamping: here) - restamped)) : here
            timeline.saw(stream: stream, runningTime: pts.nanoseconds, streamPTS: streamPTS)
        }
        history.append(MediaUnit(stream: stream, pts: decodeTime, duration: sample.duration?.nanoseconds ?? 0,
                                 isKeyframe: !sample.isDelta, payload: HeldSample(bytes: slice, reorder: reorder)),
                       byteSize: Int(slice.count))
        reportAvailable()
        startWaking()
        if !sample.isDelta, let waiting = state.withLock(\.waitingMove) { _ = request(waiting) }
        playDueSoon()
    }

    /// The stream ended: what is held for it still plays, then its end.
    func ended(stream: Int) {
        let all = state.withLock { state -> Bool in
            state.ended.insert(stream)
            state.draining = state.ended.count == state.outputs.count
            return state.draining
        }
        // What is held goes out on time; the output ends once it has all gone.
        if all { playDueSoon() }
    }

    /// Makes the wake-up timer, once media has come (it ends with the stage).
    private func startWaking() {
        let timer: (any DispatchSourceTimer)? = state.withLock { state in
            guard state.wake == nil, !state.finished else { return nil }
            let timer = DispatchSource.makeTimerSource(queue: playout)
            state.wake = timer
            // Media has come and nothing plays yet: what plays now is not what left the source.
            // Said under the lock, so a finish (which says it holds nothing) cannot come between.
            playoutHold.filling(by: name)
            return timer
        }
        guard let timer else { return }
        // No strong reference: the timer ends with the stage.
        timer.setEventHandler { [weak self] in self?.playDueAndWait() }
        timer.schedule(deadline: .now() + .nanoseconds(Int(Self.startCheck.totalNanoseconds)))
        timer.resume()
    }

    /// Plays what is due, reports, and sleeps until the next thing to do; on the play-out queue.
    private func playDueAndWait() {
        guard let (timer, sleep) = playDue() else { return }
        reportStats()
        timer?.schedule(deadline: .now() + .nanoseconds(Int(sleep.totalNanoseconds)))
    }

    /// How long play-out may sleep: until the next unit held is due `lead` ahead at running time
    /// `now`, or the next report, whichever is sooner. A unit not due by the clock but by what
    /// arrives (history not yet `delay` deep past it) is woken by its arrival, as are new units.
    /// Before play-out starts (the start waits on the clock as well as on what is held) it looks
    /// every `startCheck`.
    private func sleep(_ state: State, now: UInt64?) -> Duration {
        let sinceReport = state.statsAt.map { ContinuousClock.now - $0 } ?? .zero
        let report = max(.milliseconds(1), Self.reportEvery - sinceReport)
        guard state.pausedSince == nil else { return report }
        guard let cursor = state.cursor, let shift = state.shift, let now else { return min(report, Self.startCheck) }
        guard let next = history.nextPTS(cursor) else { return report }
        let due = Int64(clamping: next) + shift - Self.lead.totalNanoseconds - Int64(clamping: now)
        return due > 0 ? min(report, .nanoseconds(due)) : report
    }

    deinit { state.withLock { $0.wake }?.cancel() }

    /// Running time on the pipeline clock, while the pipeline plays.
    static func runningTime(of outputs: [AppSrc]) -> UInt64? {
        outputs.first?.element.runningTime?.nanoseconds
    }

    /// What is due goes out from the play-out queue, after whatever is going out now.
    func playDueSoon() {
        playout.async { [weak self] in self?.playDueAndWait() }
    }

    /// A unit handed to an appsrc.
    private struct Push {
        let output: AppSrc
        let unit: MediaUnit<HeldSample>
        let pts: UInt64
        let discont: Bool
    }

    /// Hands the appsrcs every unit whose play-out time is at most `lead` away on the pipeline
    /// clock; on the play-out queue. Returns the wake-up timer and how long play-out may sleep
    /// (see `sleep`); nil once the outputs have ended.
    private func playDue() -> ((any DispatchSourceTimer)?, Duration)? {
        dispatchPrecondition(condition: .onQueue(playout))
        var said: [RunEvent.Kind] = []
        let (pushes, ending, next) = state.withLock { state -> ([Push], [AppSrc], ((any DispatchSourceTimer)?, Duration)?) in
            guard !state.finished else { return ([], [], nil) }
            guard state.pausedSince == nil else { return ([], [], (state.wake, sleep(state, now: nil))) }
            let now = Self.runningTime(of: state.outputs)
            if state.cursor == nil {
                // Never started (the stream ended before the initial delay was held): just end.
                if state.draining { return ([], finish(&state), nil) }
                guard startIfHeld(&state, now: now, said: &said) else { return ([], [], (state.wake, sleep(state, now: now))) }
            }
            guard var cursor = state.cursor, let shift = state.shift, let now else { return ([], [], (state.wake, sleep(state, now: now))) }
            // A unit at running time t plays at t + shift; it goes out `lead` before then.
            let horizon = Int64(clamping: now) + Self.lead.totalNanoseconds - shift
            guard horizon >= 0 else { return ([], [], (state.wake, sleep(state, now: now))) }
            let due = history.due(&cursor, through: UInt64(horizon))
            state.cursor = cursor
            var pushes: [Push] = []
            for unit in due where state.outputs.indices.contains(unit.stream) {
                let pts = Int64(clamping: unit.pts) + shift
                // Before the time line began (long past) a unit is not played, nor are the units that
                // depend on it: what goes out goes on from the stream's next keyframe (or, for a stream
                // that marks none, `keyframeWait` of its time later).
                let waitingSince = state.awaitingKeyframe[unit.stream]
                guard pts >= 0, unit.isKeyframe || waitingSince.map({ unit.pts >= $0 + Self.keyframeWait }) ?? true else {
                    state.awaitingKeyframe[unit.stream] = waitingSince ?? unit.pts
                    continue
                }
                state.awaitingKeyframe[unit.stream] = nil
                let discont = state.discont.remove(unit.stream) != nil
                pushes.append(Push(output: state.outputs[unit.stream], unit: unit, pts: UInt64(pts), discont: discont))
                state.outputEnd = max(state.outputEnd ?? 0, pts + Int64(clamping: unit.payload.reorder + unit.duration))
            }
            if let last = due.last { state.playedThrough = (last.stream, last.pts + last.payload.reorder + last.duration) }
            let ending = state.draining && history.isCaughtUp(cursor) ? finish(&state) : []
            return (pushes, ending, state.finished ? nil : (state.wake, sleep(state, now: now)))
        }
        for event in said { events.emit(event) }
        for push in pushes {
            let held = push.unit.payload
            held.bytes.withUnsafeBytes { bytes in
                _ = push.output.push(
                    bytes, pts: ClockTime(nanoseconds: push.pts + held.reorder), dts: ClockTime(nanoseconds: push.pts),
                    duration: push.unit.duration > 0 ? ClockTime(nanoseconds: push.unit.duration) : nil,
                    isDelta: !push.unit.isKeyframe, discont: push.discont)
            }
        }
        for output in ending { output.endOfStream() }
        return next
    }

    /// Taken out by a swap: nothing more is played or reported, and the outputs end now
    /// (after any push under way).
    func retire() {
        let ending = state.withLock { state in state.finished ? [] : finish(&state) }
        playout.async { for output in ending { output.endOfStream() } }
    }

    /// Marks play-out over; returns the outputs to end (outside the lock, on the play-out queue).
    private func finish(_ state: inout State) -> [AppSrc] {
        state.finished = true
        playoutHold.set(nil, by: name)
        state.wake?.cancel()
        return state.outputs
    }
}
