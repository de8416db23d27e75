import CastlineKit
import Foundation
import GstKit
import Synchronization

/// The play-out of a delay stage: units go into the history as they arrive
/// (timed by running time), and come out `delay` later on the same time line.
///
/// A unit with running time t plays at t + delay. It is handed to the appsrc
/// `lead` before then (when media `delay - lead` newer than it has arrived), so
/// the decoder and sink have it in time. A change of delay moves the cursor:
/// the units that follow carry t + new delay, which continues the time line
/// (further back: t is smaller by the change), so the sinks see no gap and no
/// overlap, only a discontinuity in content.
final class DelayPlayout: Sendable {
    static let lead: Duration = .milliseconds(200)

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
    }

    let history: HistoryBuffer<ByteSlice>
    private let events: EventEmitter
    /// The stage's name, for its stats samples.
    private let name: String
    private let state: Mutex<State>
    /// One arena per stream, in stream order (eviction frees whole chunks).
    private let arenas = Mutex<[ByteArenaBox]>([])

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
        history.append(MediaUnit(stream: stream, pts: pts.nanoseconds, duration: sample.duration?.nanoseconds ?? 0,
                                 isKeyframe: !sample.isDelta, payload: slice), byteSize: Int(slice.count))
        reportAvailable()
        playDue()
    }

    /// The stream ended: what is held for it still plays, then its end.
    func ended(stream: Int) {
        let (outputs, all) = state.withLock { state -> ([AppSrc], Bool) in
            state.ended.insert(stream)
            return (state.outputs, state.ended.count == state.outputs.count)
        }
        guard all else { return }
        // Everything held goes out now, timed as it would have played.
        playDue(draining: true)
        for output in outputs { output.endOfStream() }
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

    private func playDue(draining: Bool = false) {
        // Units are pushed under the lock so two streaming threads keep the order.
        state.withLock { state in
            if state.cursor == nil {
                guard startIfHeld(&state) else { return }
            }
            guard var cursor = state.cursor, let applied = state.applied else { return }
            // At the end, everything held is due (without skipping it, as a seek would).
            if draining { cursor.delay = .zero }
            let due = history.due(&cursor)
            state.cursor = cursor
            let offset = ClockTime(applied).nanoseconds
            for unit in due where state.outputs.indices.contains(unit.stream) {
                let discont = state.discont.remove(unit.stream) != nil
                unit.payload.withUnsafeBytes { bytes in
                    _ = state.outputs[unit.stream].push(
                        bytes, pts: ClockTime(nanoseconds: unit.pts + offset), dts: nil,
                        duration: unit.duration > 0 ? ClockTime(nanoseconds: unit.duration) : nil,
                        isDelta: !unit.isKeyframe, discont: discont)
                }
            }
        }
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

    /// available-delay-changed, at most once a second, while the history grows;
    /// and once a second the delay and what is available as stats figures.
    private func reportAvailable() {
        let available = history.available
        let now = ContinuousClock.now
        let (grew, applied) = state.withLock { state -> (Bool, Duration?) in
            var applied: Duration?
            if state.statsAt.map({ now - $0 >= .seconds(1) }) ?? true {
                state.statsAt = now
                applied = state.applied ?? .zero
            }
            guard available > state.reportedAvailable,
                  state.reportedAt.map({ now - $0 >= .seconds(1) }) ?? true else { return (false, applied) }
            state.reportedAvailable = available
            state.reportedAt = now
            return (true, applied)
        }
        if grew { events.emit(.availableDelayChanged(available)) }
        if let applied {
            events.emit(.stats(StatsSample(stage: name, stream: nil, figures: [
                StatsFigure.delaySeconds: applied.seconds, StatsFigure.availableDelaySeconds: available.seconds,
            ])))
        }
    }
}

/// A stream's byte arena, in a class so an array of them can sit in a Mutex.
final class ByteArenaBox: @unchecked Sendable {  // only touched under DelayPlayout.arenas' lock
    var arena = ByteArena()
}
