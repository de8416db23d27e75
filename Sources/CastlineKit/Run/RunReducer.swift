import Foundation
import GstKit

/// The transitions of `RunModel.reduce`, input by input.
extension RunModel {
    mutating func take(_ input: RunInput, into effects: inout [RunEffect]) {
        if case .finished = phase { return }
        switch input {
        case .start:
            guard phase == .idle else { return }
            move(to: .starting, &effects)
        case .built(let layout, let leftOut):
            guard phase == .starting else { return }
            self.layout = layout
            move(to: .running(.connecting), &effects)
            for lost in leftOut {
                lostSinks.append(lost)
                effects.append(.warning("\(lost.keyPath): \(lost.reason); \(othersGoOn(layout.sinks.count))"))
            }
        case .buildFailed(let text):
            guard phase == .starting else { return }
            finish(.failed(text), announce: false, &effects)
        case .playRequested(let result):
            switch result {
            case .failure:
                guard case .running = phase else { return }
                move(to: .refused, &effects)
                effects.append(.startTimer(.refusal))
            case .noPreroll:
                media = .notYetPlayed(live: true)
            case .success, .async:
                break
            }
        case .stop:
            stop(&effects)
        case .abort:
            finish(.failed("stopped at once; outputs may be incomplete"), announce: true, &effects)
        case .pause:
            pause(&effects)
        case .resume:
            resume(&effects)
        case .swapBegan:
            guard case .running(let activity) = phase else { return }
            move(to: .swapping(activity, wasPaused: false, then: .goOn), &effects)
        case .swapApplying(let retiring):
            guard case .swapping(var activity, _, let then) = phase else { return }
            retired.formUnion(retiring)
            // Paused sinks would hold the old parts' threads, and taking them out needs those threads.
            let wasPaused = activity == .paused
            if wasPaused {
                effects.append(hold(false))
                activity = .playing
            }
            if activity == .buffering {
                effects.append(.setPipelineState(.playing))
                activity = .playing
            }
            move(to: .swapping(activity, wasPaused: wasPaused, then: then), &effects)
        case .swapEnded(let layout):
            guard case .swapping(let activity, let wasPaused, let then) = phase else { return }
            self.layout = layout
            move(to: .running(activity), &effects)
            if wasPaused { pause(&effects) }
            if then == .stop { stop(&effects) }
        case .timerFired(.drain):
            guard phase == .stopping else { return }
            finish(.failed("end-of-stream did not reach the outputs within \(drainTimeout.configText); outputs may be incomplete"),
                   announce: true, &effects)
        case .timerFired(.refusal):
            guard phase == .refused else { return }
            finish(.failed("the pipeline could not start"), announce: false, &effects)
        case .connection(let keyPath, let change):
            connectionChanged(change, from: keyPath, &effects)
        case .sinksFinished(let reports):
            sinksFinished(reports, &effects)
        case .error(let source, let owner, let text, let hint, let cause):
            guard outcome == nil, !retired.contains(source) else { return }
            let line: String
            if let missingDecoder {
                line = "\(owner): \(missingDecoder)"
            } else if cause == .diskFull {
                line = "\(owner): the disk is full (free some space, or write to another disk)"
            } else if let hint, hint != source {
                line = "\(owner): \(text) (\(hint))"
            } else {
                line = "\(owner): \(text)"
            }
            finish(.failed(line), announce: phase != .refused, &effects)
        case .warning(let source, let owner, let text):
            guard outcome == nil, !retired.contains(source) else { return }
            effects.append(.warning("\(owner): \(text)"))
        case .missingDecoder(let line):
            missingDecoder = line
        case .latency:
            // Off the streaming thread, as GStreamer asks: it takes the state lock.
            if outcome == nil { effects.append(.recalculateLatency) }
        case .endOfStream:
            guard outcome == nil else { return }
            effects.append(.endOfStream)
            finish(phase == .stopping ? .stopped : .completed, announce: true, &effects)
        case .pipelinePlaying(let hasKnownEnd):
            firstPlayed(hasKnownEnd: hasKnownEnd)
            guard !awaitsDestination else {
                // Buffered, and playing again: still waiting on a destination.
                if phase == .running(.buffering) { move(to: .running(.connecting), &effects) }
                return
            }
            switch phase {
            case .running(let activity) where activity != .reconnecting:
                move(to: .running(.playing), &effects)
            case .swapping(let activity, let wasPaused, let then) where activity != .reconnecting:
                move(to: .swapping(.playing, wasPaused: wasPaused, then: then), &effects)
            default:
                break
            }
        case .buffering(let percent):
            buffering(percent, &effects)
        }
    }

    /// Changes phase, announcing the state people see when it changes.
    private mutating func move(to next: Phase, _ effects: inout [RunEffect]) {
        let old = state
        phase = next
        if state != old { effects.append(.announce(from: old, to: state)) }
    }

    private func hold(_ held: Bool) -> RunEffect {
        layout.holdsPlayout ? .holdPlayout(held) : .setPipelineState(held ? .paused : .playing)
    }

    private mutating func firstPlayed(hasKnownEnd: Bool) {
        if case .notYetPlayed(let live) = media { media = .played(live: live, knownEnd: hasKnownEnd) }
    }

    private mutating func stop(_ effects: inout [RunEffect]) {
        switch phase {
        case .idle, .starting:
            // Nothing plays yet: whatever the source waits on is cancelled, and the run is over.
            effects.append(.cancelPreparation)
            effects.append(.stopSource(sendEndOfStream: false))
            finish(.stopped, announce: true, &effects)
        case .running where !media.hasPlayed:
            // Still on its way to PLAYING: nothing has played to be completed, and an end-of-stream
            // sent now would meet the state change (a live source's thread held in a sink's preroll,
            // the send holding the pipeline's state lock the change needs): a deadlock. Torn down.
            effects.append(.stopSource(sendEndOfStream: false))
            finish(.stopped, announce: true, &effects)
        case .running(let activity):
            // Paused (by the user, or to buffer), the sinks would never render the end.
            if activity == .paused { effects.append(hold(false)) }
            if activity == .buffering || activity == .reconnecting { effects.append(.setPipelineState(.playing)) }
            move(to: .stopping, &effects)
            effects.append(.notice("stopping: sending end-of-stream so outputs are complete"))
            // A stop is now: what a sound card or window would still play (seconds queued for a
            // clocked sink) is not waited for; a recording that takes media as it comes keeps all of it.
            effects.append(.cutPlayout)
            effects.append(.stopSource(sendEndOfStream: true))
            effects.append(.startTimer(.drain))
        case .swapping(let activity, let wasPaused, _):
            phase = .swapping(activity, wasPaused: wasPaused, then: .stop)
        case .stopping, .refused, .finishing, .finished:
            break
        }
    }

    private mutating func pause(_ effects: inout [RunEffect]) {
        guard phase == .running(.playing) else { return }
        effects.append(hold(true))
        move(to: .running(.paused), &effects)
    }

    private mutating func resume(_ effects: inout [RunEffect]) {
        guard phase == .running(.paused) else { return }
        effects.append(hold(false))
        move(to: .running(.playing), &effects)
    }

    private mutating func buffering(_ percent: Int, _ effects: inout [RunEffect]) {
        guard outcome == nil, phase != .idle, phase != .starting else { return }
        // A stage that plays out on its own clock (a time-shift): buffering before it only fills it,
        // and the stage says how full it is.
        guard !layout.playsOutOnItsOwnClock else { return }
        // With no known end and once playing, its buffer is held back by the live edge and never
        // fills: not a stall (a live stream that stops coming is `reconnecting` or ends).
        if case .played(_, knownEnd: false) = media { return }
        effects.append(.buffering(percent: percent))
        guard !media.isLive, case .running(let activity) = phase, activity != .paused, activity != .reconnecting else { return }
        // Non-live media waits for its buffer, as a player does: fully at first; once it has played,
        // only when the buffer runs dry, resuming at half.
        let played = media != .notYetPlayed(live: false)
        let pauseBelow = played ? 1 : 100
        let resumeAt = played ? 50 : 100
        if percent < pauseBelow, activity != .buffering {
            effects.append(.setPipelineState(.paused))
            move(to: .running(.buffering), &effects)
        } else if percent >= resumeAt, activity == .buffering {
            effects.append(.setPipelineState(.playing))
        }
    }

    private var lostSinksText: String { lostSinks.map { "\($0.keyPath): \($0.reason)" }.joined(separator: "; ") }

    private mutating func connectionChanged(_ change: ConnectionChange, from keyPath: String, _ effects: inout [RunEffect]) {
        guard outcome == nil, phase != .idle else { return }
        switch change {
        case .connected:
            guard layout.destinations.contains(keyPath) else { return }
            upDestinations.insert(keyPath)
            reachedDestinations.insert(keyPath)
            // A destination has the stream: the run plays, whether it waited for the first, or
            // another was reconnecting (or had never connected).
            guard case .played = media else { return }
            let reconnected = reconnectingParts.isEmpty
            switch phase {
            case .running(.connecting): move(to: .running(.playing), &effects)
            case .running(.reconnecting) where reconnected: move(to: .running(.playing), &effects)
            case .swapping(.connecting, let wasPaused, let then):
                move(to: .swapping(.playing, wasPaused: wasPaused, then: then), &effects)
            case .swapping(.reconnecting, let wasPaused, let then) where reconnected:
                move(to: .swapping(.playing, wasPaused: wasPaused, then: then), &effects)
            default: break
            }
        case .stalled:
            // Held until the source has enough; a stage with its own play-out clock (a time-shift) holds it already.
            guard phase == .running(.playing), !media.isLive, !layout.playsOutOnItsOwnClock else { return }
            effects.append(.buffering(percent: 0))
            effects.append(.setPipelineState(.paused))
            move(to: .running(.buffering), &effects)
        case .buffered:
            switch phase {
            case .running(.buffering):
                break  // shown as playing once the pipeline is (`pipelinePlaying`)
            case .swapping(.buffering, let wasPaused, let then):
                // A swap that fails goes back to this activity: it must not be a held pipeline's.
                phase = .swapping(.playing, wasPaused: wasPaused, then: then)
            default:
                return
            }
            effects += [.buffering(percent: 100), .setPipelineState(.playing)]
        case .reconnecting(let reason, let attempt, let delay):
            // Reconnecting is not held: the source says again that it is stalled once it is back.
            upDestinations.remove(keyPath)
            if phase == .running(.buffering) { effects.append(.setPipelineState(.playing)) }
            // The run reconnects when what it is for does: not while another destination has the
            // stream, nor while none has had it yet (still connecting).
            let destination = layout.destinations.contains(keyPath)
            if !destination { reconnectingParts.insert(keyPath) }
            let anotherUp = destination && !upDestinations.isEmpty
            if case .running = phase, !anotherUp, !(destination && awaitsDestination) { move(to: .running(.reconnecting), &effects) }
            let retry = "in \(String(format: "%.1f", delay.seconds)) s (attempt \(attempt))"
            if reason.hasPrefix(ConnectionChange.notYetConnected) {
                effects.append(.warning("\(naming(keyPath))not connected yet (\(reason.dropFirst(ConnectionChange.notYetConnected.count))); trying again \(retry)"))
            } else {
                effects.append(.warning("\(naming(keyPath))connection lost (\(reason)); reconnecting \(retry)"))
            }
        case .reconnected(let attempts):
            if layout.destinations.contains(keyPath) { upDestinations.insert(keyPath) }
            reconnectingParts.remove(keyPath)
            effects.append(.notice("\(naming(keyPath))reconnected after \(attempts) attempt\(attempts == 1 ? "" : "s")"))
            if phase == .running(.reconnecting), reconnectingParts.isEmpty { move(to: .running(.playing), &effects) }
        case .failed(let reason):
            upDestinations.remove(keyPath)
            reconnectingParts.remove(keyPath)
            sinkFailed(keyPath, reason: reason, &effects)
        }
    }

    /// A sink that cannot go on ends the run only when it was the last one: one destination of
    /// several refusing the key or going away for good never stops the others.
    /// The last destination going ends the run the same way: a recording beside it is finished
    /// (end-of-stream, then a whole file), and the run fails with the destination's reason.
    private mutating func sinkFailed(_ keyPath: String, reason: String, _ effects: inout [RunEffect]) {
        guard !lostSinks.contains(where: { $0.keyPath == keyPath }) else { return }
        lostSinks.append(LostSink(keyPath: keyPath, reason: reason))
        let isLeft = { (sink: String) in !self.lostSinks.contains { $0.keyPath == sink } }
        let left = layout.sinks.filter(isLeft).count
        guard layout.sinks.contains(keyPath), left > 0 else {
            return finish(.failed(lostSinks.count == 1 ? reason : lostSinksText), announce: true, &effects)
        }
        if layout.destinations.contains(keyPath), !layout.destinations.contains(where: isLeft) {
            effects.append(.warning("\(keyPath): \(reason); no destination is left, so the run ends"))
            return stop(&effects)
        }
        effects.append(.warning("\(keyPath): \(reason); \(othersGoOn(left))"))
    }

    /// Which of several destinations a line is about: its key path, and where it publishes.
    private func naming(_ keyPath: String) -> String {
        guard layout.destinations.count > 1, layout.destinations.contains(keyPath) else { return "" }
        return layout.destinationNames[keyPath].map { "\(keyPath) (\($0)): " } ?? "\(keyPath): "
    }

    private func othersGoOn(_ left: Int) -> String {
        "the other \(left == 1 ? "sink goes" : "\(left) sinks go") on"
    }

    private mutating func finish(_ result: Outcome, announce: Bool, _ effects: inout [RunEffect]) {
        guard outcome == nil else { return }
        let result = !lostSinks.isEmpty && !result.isFailure ? .failed(lostSinksText) : result
        phase = .finishing(result, announce: announce, shown: state)
        effects.append(.finishSinks(completed: !result.isFailure))
    }

    /// What each sink observed decides as much as what the pipeline did: a publish the far end
    /// never accepted fails the run however cleanly the media ended.
    private mutating func sinksFinished(_ reports: [RunInput.SinkReport], _ effects: inout [RunEffect]) {
        guard case .finishing(var result, let announce, _) = phase else { return }
        let failedBefore = result.isFailure
        var newlyLost: [LostSink] = []
        for report in reports {
            switch report.verdict {
            case .quiet:
                break
            case .done(let line):
                effects.append(.notice(line))
            case .failed(let line):
                guard !lostSinks.contains(where: { $0.keyPath == report.keyPath }) else { break }
                let lost = LostSink(keyPath: report.keyPath, reason: line)
                lostSinks.append(lost)
                newlyLost.append(lost)
            }
        }
        // Every sink that failed is named, not only the first; a run that failed for another
        // reason still tells of each sink that failed at its end.
        if !failedBefore, let only = lostSinks.first {
            result = .failed(reports.count == 1 && lostSinks.count == 1 ? only.reason : lostSinksText)
        } else if case .failed(let text) = result, !newlyLost.isEmpty {
            result = .failed(([text] + newlyLost.map { "\($0.keyPath): \($0.reason)" }).joined(separator: "; "))
        }
        if case .failed(let text) = result, announce { effects.append(.failure(text)) }
        move(to: .finished(result), &effects)
        effects.append(.close(result))
    }
}
