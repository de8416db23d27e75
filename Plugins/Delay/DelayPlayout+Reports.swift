import CastlineKit
import Foundation

/// What the play-out says of itself: how much delay a request can reach, its figures once a
/// second, and the stream time of what it plays out (its answer to `StreamTimeQuery`).
extension DelayPlayout {
    /// available-delay-changed, at most once a second, while the history grows.
    func reportAvailable() {
        let now = ContinuousClock.now
        let grew = state.withLock { state -> Duration? in
            guard !state.finished, state.reportedAt.map({ now - $0 >= .seconds(1) }) ?? true else { return nil }
            let available = availableDelay(state)
            guard available > state.reportedAvailable else { return nil }
            state.reportedAvailable = available
            state.reportedAt = now
            return available
        }
        if let grew { events.emit(.stage(DelayReport.availableChanged(stage: name, available: grew))) }
    }

    /// The most delay there can be now. Playing, that is the delay in use (with a pause's
    /// growth) plus how far back from the play-out position the history reaches, which is
    /// what `request` can move to: the newest media held may be ahead of delay 0 (the live
    /// edge's hold-back). Before play-out starts, what is held.
    func availableDelay(_ state: State) -> Duration {
        guard let applied = state.applied, let position = state.cursor?.position, let oldest = history.earliest
        else { return history.available }
        let back = position > oldest ? position - oldest : 0
        return applied + .nanoseconds(state.pausedFor(at: .now) + Int64(clamping: back))
    }

    /// The stream's own time (as it came in) of what plays out at running time `running` on
    /// `stream`'s output; nil before play-out starts. Paused, it stays where play-out holds.
    func streamTime(stream: Int, outputRunningTime running: UInt64, latency: UInt64) -> UInt64? {
        let now = ContinuousClock.now
        let (shift, held) = state.withLock { state in
            (state.shift.map { $0 + state.pausedFor(at: now) }, state.pausedSince != nil ? Self.playing(state, at: now)?.time : nil)
        }
        guard let shift else { return nil }
        // Paused: where play-out holds, what renders `latency` behind it, whatever running time is
        // asked (a stats stage holds its question at the last buffer that passed, which the pause's
        // growth would take back).
        if let held { return timeline.streamPTS(stream: stream, runningTime: held > latency ? held - latency : 0) }
        let arrived = Int64(clamping: running) - shift
        guard arrived >= 0 else { return nil }
        return timeline.streamPTS(stream: stream, runningTime: UInt64(arrived))
    }

    /// What plays now, in the history's running time, and on which stream it last went out: the
    /// outputs' running time less the shift (grown by a pause), never past what went out; nil
    /// before play-out starts.
    static func playing(_ state: State, at now: ContinuousClock.Instant) -> (stream: Int, time: UInt64)? {
        guard let shift = state.shift.map({ $0 + state.pausedFor(at: now) }), let played = state.playedThrough,
              let running = runningTime(of: state.outputs) else { return nil }
        let playing = Int64(clamping: running) - shift
        return playing >= 0 ? (played.stream, min(UInt64(playing), played.end)) : nil
    }

    /// Once a second: the delay, what is available, and the media playing out now
    /// as the stream's own PTS (`position_s`: for HLS the PTS its MPEG-TS segments carry, so two
    /// processes on one stream compare; the units leave re-timed, so a stats stage
    /// after this one sees running time + delay instead).
    func reportStats() {
        let now = ContinuousClock.now
        let report = state.withLock { state -> (applied: Duration, available: Duration, playing: (stream: Int, time: UInt64)?)? in
            guard !state.finished, state.statsAt.map({ now - $0 >= .seconds(1) }) ?? true else { return nil }
            state.statsAt = now
            // Paused, the delay grows by the pause and what plays stays where it paused.
            let paused = state.pausedFor(at: now)
            let applied = (state.applied ?? .zero) + .nanoseconds(paused)
            let available = availableDelay(state)
            publishHold(state)
            return (applied, available, Self.playing(state, at: now))
        }
        guard let report else { return }
        var figures = [DelayReport.delay: report.applied.seconds, DelayReport.available: report.available.seconds]
        if let playing = report.playing, let pts = timeline.streamPTS(stream: playing.stream, runningTime: playing.time) {
            figures[StatsFigure.position] = Double(pts) / 1e9
        }
        events.emit(.stats(StatsSample(stage: name, stream: nil, figures: figures)))
    }
}
