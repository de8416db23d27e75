import CastlineKit
import Foundation

/// Moving the delay and pausing: the play-out position moves in the history, and the delay in
/// force is what that makes (on to a keyframe, after what already went out).
extension DelayPlayout {
    /// Asks for a delay: the play-out position moves back (or ahead) by the
    /// change. Beyond what is held it is clamped, and said so. Returns what was applied (nil while
    /// still filling to the start: the request is then the delay it starts at).
    /// `bySteps`: moved from the delay in force (`+`, `-`), not set to a value.
    func request(_ delay: Duration, bySteps: Bool = false) -> StageEvent? {
        let wanted = max(.zero, delay)
        let report = state.withLock { state -> (applied: Duration, available: Duration)? in
            // Still filling to the initial delay: that is what will start.
            guard var cursor = state.cursor, let applied = state.applied, let position = cursor.position else {
                state.requested = wanted
                return nil
            }
            // Nowhere to move: where it plays now is asked, or nearer live than play-out can be
            // while it plays as near as it can (`lead` ahead of what is heard), or the value set
            // last is set again. Moving would only jump to a keyframe again.
            let atLive = wanted <= Self.lead && applied <= Self.lead * 2
            if abs((wanted - applied).totalNanoseconds) < 1_000_000 || atLive || (!bySteps && state.lastSet == wanted) {
                state.waitingMove = nil
                state.requested = applied
                return (applied, availableDelay(state))
            }
            state.requested = wanted
            let change = wanted.totalNanoseconds - applied.totalNanoseconds
            let target = UInt64(clamping: max(0, Int64(clamping: position) - change))
            // Clamped to what is held, and to what has gone out (`lead` ahead), and on to where video
            // can resume (a keyframe): the next step moves from the delay in use.
            guard let newApplied = move(&state, cursor: &cursor, from: position, to: target, delay: applied.totalNanoseconds) else {
                // Nowhere to go on from yet: asked again as the next keyframe comes.
                state.waitingMove = wanted
                return (applied, availableDelay(state))
            }
            state.waitingMove = nil
            let settled = settle(&state, delay: newApplied)
            // Only where the history held what was asked: set again once it holds more, it moves.
            let available = availableDelay(state)
            if !bySteps, wanted <= available { state.lastSet = wanted }
            return (settled, available)
        }
        guard let report else { return nil }
        let answer = DelayReport.changed(stage: name, requested: wanted, applied: report.applied,
                                         available: report.available, answering: true)
        events.emit(.stage(answer))
        playDueSoon()
        return answer
    }

    /// Moves play-out from `position` to `target` (clamped to what is held, then back to where
    /// every stream resumes) and marks every output's next unit a discontinuity; returns the delay
    /// that makes, from `delay` (ns) at `position`: what plays next goes on right after what went out.
    func move(_ state: inout State, cursor: inout HistoryCursor, from position: UInt64, to target: UInt64,
                      delay: Int64) -> Int64? {
        // What went out reaches past the cursor (`lead` ahead, and a B-frame's reorder): a keyframe
        // before its end is no move nearer live, so the next one past the target is what moves.
        let wentOut = state.outputEnd.map { UInt64(clamping: max(0, $0 - delay - state.anchor)) } ?? position
        let current = max(position, wentOut)
        // Nearer live, but not past what went out: on from the end of it (never back to a keyframe before it).
        let toward = target > position ? max(target, current &+ 1) : target
        guard let moved = history.seekToResumePoint(&cursor, near: toward, from: current) else { return nil }
        state.cursor = cursor
        state.discont = Set(state.outputs.indices)
        let kept = delay + (Int64(clamping: position) - Int64(clamping: moved))
        // What plays next is decoded, and shown, after everything that went out: no time is output twice.
        guard let end = state.outputEnd else { return kept }
        return max(kept, end - Int64(clamping: moved) - state.anchor)
    }

    /// The delay in force, and asked for from now on (a step moves from it): `delay` ns, at least 0.
    /// What it holds back is told at once: a stats stage after it tells a pause from frames lost by it.
    func settle(_ state: inout State, delay: Int64) -> Duration {
        let settled = Duration.nanoseconds(max(0, delay))
        state.applied = settled
        state.requested = settled
        state.lastSet = nil
        publishHold(state)
        return settled
    }

    /// Tells the run what play-out holds back (and since when it is paused), while it plays: a stats
    /// stage after it tells a pause from frames lost, the source its programme-time latency.
    func publishHold(_ state: State) {
        guard !state.finished else { return }
        if let shift = state.shift { playoutHold.set(shift, pausedSince: state.pausedSince, by: name) } else { playoutHold.filling(by: name) }
    }

    /// Holds play-out (pausing as time-shifting): what arrives is still kept, and the delay
    /// grows by the time it is held.
    func pause() {
        state.withLock { state in
            if state.pausedSince == nil { state.pausedSince = .now }
            publishHold(state)
        }
    }

    /// Plays on from where it paused: the delay is what it was plus the pause, as far as the
    /// history still reaches (a pause longer than `max` resumes from its oldest, and says so).
    /// Returns the delay it now plays at (nil while still filling).
    func resume() -> StageEvent? {
        let report = state.withLock { state -> (requested: Duration, applied: Duration, available: Duration)? in
            let paused = state.pausedFor(at: .now)
            state.pausedSince = nil
            guard var cursor = state.cursor, let applied = state.applied, let position = cursor.position else {
                // Still filling to the initial delay: the pause adds to it.
                state.requested += .nanoseconds(paused)
                return nil
            }
            let wanted = applied.totalNanoseconds + paused
            var newApplied = wanted
            if let earliest = history.earliest, position < earliest {
                // Part of what was paused on has left the history: play from its oldest.
                newApplied = move(&state, cursor: &cursor, from: position, to: position, delay: wanted) ?? wanted
            }
            return (.nanoseconds(wanted), settle(&state, delay: newApplied), availableDelay(state))
        }
        let answer = report.map {
            DelayReport.changed(stage: name, requested: $0.requested, applied: $0.applied, available: $0.available, answering: false)
        }
        if let answer { events.emit(.stage(answer)) }
        playDueSoon()
        return answer
    }
}
