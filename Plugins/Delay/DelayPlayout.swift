import CastlineKit
import Foundation
import GstKit
import Synchronization

/// The play-out of a delay stage: units go into the history as they arrive
/// (timed by running time), and come out `delay` later on the same time line.
///
/// A unit with running time t plays at t + delay. It is handed to the appsrc
/// `lead` before then, by the pipeline clock, so the decoder and sink have it
/// in time and the appsrc never holds more than `lead` of media (a source
/// faster than real time, such as a file, would otherwise pile the whole
/// history up there a second time, as GStreamer buffers). A change of delay
/// moves the cursor: the units that follow carry t + new delay, which
/// continues the time line (further back: t is smaller by the change), so the
/// sinks see no gap and no overlap, only a discontinuity in content.
final class DelayPlayout: Sendable {
    static let lead: Duration = .milliseconds(200)
    /// How often play-out looks at the clock when no media arrives; well under `lead`.
    static let tick: Duration = .milliseconds(20)

    private struct State {
        var requested: Duration
        /// What output timestamps add to running time; nil until the initial delay is held.
        var applied: Duration?
        var cursor: HistoryCursor?
        var outputs: [AppSrc] = []
        var ended: Set<Int> = []
        /// The next unit out of each stream is the first after a jump.
        var discont: Set<Int> = []
        var reportedAvailable: Duration = .zero
        var reportedAt: ContinuousClock.Instant?
        var statsAt: ContinuousClock.Instant?
        var bufferingPercent = -1
        /// Every stream ended: what is held still plays, then every output ends.
        var draining = false
        var finished = false
        var ticking = false
        /// The newest unit handed out: its stream and the running time its media ends.
        var playedThrough: (stream: Int, end: UInt64)?
    }

    let history: HistoryBuffer<ByteSlice>
    private let events: EventEmitter
    /// The stage's name, for its stats samples.
    private let name: String
    private let state: Mutex<State>
    /// One arena per stream, in stream order (eviction frees whole chunks).
    private let arenas = Mutex<[ByteArenaBox]>([])
    /// Each stream's own PTS against running time, for the position played out.
    private let timeline = SourceTimeline()

    init(initial: Duration, max: Duration, name: String, events: EventEmitter) {
        history = HistoryBuffer(maxDuration: max)
        self.name = name
        self.events = events
        state = Mutex(State(requested: initial))
    }

    var requested: Duration { state.withLock(\.requested) }

    /// A stream's output; returns its index in the history.
    func register(_ output: AppSrc, stream: StreamKind) -> Int {
        arenas.withLock { $0.append(ByteArenaBox()) }
        return state.withLock { state in
            state.outputs.append(output)
            return state.outputs.count - 1
        }
    }

    /// A unit arrived on `stream`: held, then whatever is due goes out.
    func arrived(_ sample: Sample, stream: Int) {
        guard let pts = sample.runningTime.pts else { return }
        let output = state.withLock { $0.outputs[stream] }
        if let caps = sample.caps, output.caps != caps {
            output.caps = caps
        }
        let slice = sample.withUnsafeBytes { bytes in
            arenas.withLock { $0[stream].arena.store(bytes) }
        }
        guard let slice else { return }
        if let streamPTS = sample.pts {
            timeline.saw(stream: stream, runningTime: pts.nanoseconds, streamPTS: streamPTS.nanoseconds)
        }
        history.append(MediaUnit(stream: stream, pts: pts.nanoseconds, duration: sample.duration?.nanoseconds ?? 0,
                                 isKeyframe: !sample.isDelta, payload: slice), byteSize: Int(slice.count))
        reportAvailable()
        startTicking()
        playDue()
    }

    /// The stream ended: what is held for it still plays, then its end.
    func ended(stream: Int) {
        let all = state.withLock { state -> Bool in
            state.ended.insert(stream)
            state.draining = state.ended.count == state.outputs.count
            return state.draining
        }
        // Everything held goes out, timed as it would have played; the tick ends the outputs after it.
        if all { playDue() }
    }

    /// Asks for a delay; beyond what is held it is clamped, and said so.
    func request(_ delay: Duration) {
        let wanted = max(.zero, delay)
        let report = state.withLock { state -> (Duration, Duration, Duration)? in
            state.requested = wanted
            guard var cursor = state.cursor else { return nil }  // still filling to the initial delay
            let moved = history.seek(&cursor, toDelay: max(.zero, wanted - Self.lead))
            state.cursor = cursor
            // The cursor runs `lead` nearer live than the timestamps (clamped or not).
            let applied = wanted >= Self.lead ? moved.applied + Self.lead : wanted
            state.applied = applied
            state.discont = Set(state.outputs.indices)
            return (wanted, applied, moved.available)
        }
        if let (requested, applied, available) = report {
            events.emit(.delayChanged(requested: requested, applied: applied, available: available))
            playDue()
        }
    }

    /// Looks at the clock every `tick` until the outputs have ended (or the stage is gone),
    /// so held media goes out on time when nothing new arrives.
    private func startTicking() {
        guard state.withLock({ state in defer { state.ticking = true }; return !state.ticking }) else { return }
        Task.detached { [weak self] in
            // No strong reference across the sleep: the loop ends with the stage.
            while self?.tickOnce() == true {
                try? await Task.sleep(for: DelayPlayout.tick)
            }
        }
    }

    /// One look at the clock; false once the outputs have ended.
    private func tickOnce() -> Bool {
        playDue()
        reportStats()
        return !state.withLock(\.finished)
    }

    /// Hands the appsrcs every unit whose play-out time is at most `lead` away on the pipeline clock.
    private func playDue() {
        // Units are pushed under the lock so the streaming thread and the tick keep the order.
        state.withLock { state in
            guard !state.finished else { return }
            if state.cursor == nil {
                // Never started (the stream ended before the initial delay was held): just end.
                if state.draining { return finish(&state) }
                guard startIfHeld(&state) else { return }
            }
            guard var cursor = state.cursor, let applied = state.applied,
                  let now = state.outputs.first?.element.runningTime?.nanoseconds else { return }
            // At the end, everything held is due (without skipping it, as a seek would).
            if state.draining { cursor.delay = .zero }
            let offset = ClockTime(applied).nanoseconds
            let horizon = now + ClockTime(Self.lead).nanoseconds
            guard horizon >= offset else { return }
            let due = history.due(&cursor, through: horizon - offset)
            state.cursor = cursor
            for unit in due where state.outputs.indices.contains(unit.stream) {
                let discont = state.discont.remove(unit.stream) != nil
                unit.payload.withUnsafeBytes { bytes in
                    _ = state.outputs[unit.stream].push(
                        bytes, pts: ClockTime(nanoseconds: unit.pts + offset), dts: nil,
                        duration: unit.duration > 0 ? ClockTime(nanoseconds: unit.duration) : nil,
                        isDelta: !unit.isKeyframe, discont: discont)
                }
            }
            if let last = due.last { state.playedThrough = (last.stream, last.pts + last.duration) }
            if state.draining, history.isCaughtUp(cursor) { finish(&state) }
        }
    }

    private func finish(_ state: inout State) {
        state.finished = true
        for output in state.outputs { output.endOfStream() }
    }

    /// Starts play-out once the history holds the initial delay; until then says how full it is.
    private func startIfHeld(_ state: inout State) -> Bool {
        let available = history.available
        guard available >= state.requested else {
            let percent = Int(available.seconds / max(state.requested.seconds, 0.001) * 100)
            if percent / 5 != state.bufferingPercent / 5 {
                state.bufferingPercent = percent
                events.emit(.buffering(percent: percent))
            }
            return false
        }
        let cursor = history.cursor(delay: max(.zero, state.requested - Self.lead))
        state.cursor = cursor
        state.applied = state.requested
        events.emit(.delayChanged(requested: state.requested, applied: state.requested, available: available))
        return true
    }

    /// available-delay-changed, at most once a second, while the history grows.
    private func reportAvailable() {
        let available = history.available
        let now = ContinuousClock.now
        let grew = state.withLock { state -> Bool in
            guard available > state.reportedAvailable,
                  state.reportedAt.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            state.reportedAvailable = available
            state.reportedAt = now
            return true
        }
        if grew { events.emit(.availableDelayChanged(available)) }
    }

    /// Once a second: the delay, what is available, and the media playing out now
    /// as the stream's own PTS (`position_s`: for HLS the MPEG-TS PTS, so two
    /// processes on one stream compare; the units leave re-timed, so a stats
    /// stage after this one sees running time + delay instead).
    private func reportStats() {
        let now = ContinuousClock.now
        let report = state.withLock { state -> (applied: Duration, playing: (stream: Int, time: UInt64)?)? in
            guard state.statsAt.map({ now - $0 >= .seconds(1) }) ?? true else { return nil }
            state.statsAt = now
            let applied = state.applied ?? .zero
            guard state.cursor != nil, let played = state.playedThrough,
                  let running = state.outputs.first?.element.runningTime?.nanoseconds else { return (applied, nil) }
            // What plays now: running time minus the delay, and never past what went out.
            let delayed = running - min(running, ClockTime(applied).nanoseconds)
            return (applied, (played.stream, min(delayed, played.end)))
        }
        guard let report else { return }
        var figures = [StatsFigure.delaySeconds: report.applied.seconds,
                       StatsFigure.availableDelaySeconds: history.available.seconds]
        if let playing = report.playing, let pts = timeline.streamPTS(stream: playing.stream, runningTime: playing.time) {
            figures[StatsFigure.position] = Double(pts) / 1e9
        }
        events.emit(.stats(StatsSample(stage: name, stream: nil, figures: figures)))
    }
}

/// A stream's byte arena, in a class so an array of them can sit in a Mutex.
final class ByteArenaBox: @unchecked Sendable {  // only touched under DelayPlayout.arenas' lock
    var arena = ByteArena()
}
