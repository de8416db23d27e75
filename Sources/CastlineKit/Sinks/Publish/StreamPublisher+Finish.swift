import Foundation

/// How a publish ends: its end-of-stream drained into the far end (at most `drain`), the
/// pipeline taken down, and the verdict on what the far end took.
extension StreamPublisher {
    /// Ends the publish: end-of-stream through the publishing pipeline (rtmp2sink then
    /// unpublishes), waiting for it at most `drain`. The verdict is what the far end took: a
    /// publish it never accepted is a failure, however long the run.
    func finish(drain: Duration) async -> SinkVerdict {
        let (pipeline, output, draining): (Pipeline?, Element?, (any PublishFeed)?) = state.withLock { state in
            // Only a connection that is up has anything to drain into; otherwise the pipeline is only torn down.
            var draining: (any PublishFeed)?
            if case .publishing = state.phase, state.connectedSince != nil { draining = state.feed }
            // Up to the end, as far as can be told: a far end that stopped taking the stream did not have the end.
            if state.connectedSince != nil, let quiet = state.farEnd.quietSince(mediaCame: state.mediaCame, at: .now) {
                state.lostAt = quiet
                state.disconnected(at: quiet)
            }
            state.disconnected()
            state.phase = .finished
            state.pending = []
            defer {
                state.pipeline = nil
                state.feed = nil
            }
            return (state.pipeline, state.output, draining)
        }
        if pipeline != nil, let draining {
            draining.endOfStream()
            await waitForDrain(within: drain)
        }
        if let pipeline {
            await onQueue { [self] in
                _ = pipeline.setState(.null)
                // The last counters, read before the output lets go of what it reads them from.
                state.withLock { _ = counters(&$0) }
                if let output { settings.output.closed(output) }
            }
        }
        // rtmp2sink keeps its last counters once stopped: the last figures and the line read the same ones.
        let (last, verdict): ([String: Double], SinkVerdict) = state.withLock { state in
            guard state.everConnected else {
                guard let launchedAt = state.launchedAt else {
                    return (figures(&state), Self.endedBeforeMedia(settings.displayURL))
                }
                let waited = ContinuousClock.now - launchedAt
                // Ended sooner than a server can be expected to answer: the run was too short to tell.
                if state.lastFailure == nil, waited < Self.shortestJudged, !settings.output.waitsForCallers {
                    return (figures(&state), .failed("nothing was published: the run ended " + String(format: "%.1f s", waited.seconds)
                        + " after the publish began, before \(settings.displayURL) had taken the stream (run longer; if it "
                        + "still does not, check the host and port)"))
                }
                return (figures(&state), .failed(settings.output.neverConnected(reason: state.lastFailure, waited: waited)))
            }
            let figures = figures(&state)
            let seconds = String(format: "%.1f", state.publishedTime.seconds)
            let counts = "reconnects: \(state.reconnects), " + state.shown.text
            // Down when the run ended: what it published is told, but the far end did not have the end.
            if let lostAt = state.lostAt {
                return (figures, .failed("the connection to \(settings.displayURL) was lost "
                    + String(format: "%.1f", (ContinuousClock.now - lostAt).seconds) + " s before the end and was not back "
                    + "(published \(seconds) s, \(counts))"))
            }
            // One destination of several is named as the summary names it (two keys to one URL read alike).
            let who = context.destinations() > 1 ? context.componentName : settings.output.scheme
            return (figures, .done("\(who): published \(seconds) s to \(settings.displayURL), \(counts)"))
        }
        if case .done = verdict { context.events.emit(.stats(StatsSample(stage: context.componentName, stream: nil, figures: last))) }
        return verdict
    }

    /// The verdict on a publish the run ended before it began.
    static func endedBeforeMedia(_ displayURL: String) -> SinkVerdict {
        .failed("nothing was published: the run ended before any media reached \(displayURL)")
    }

    /// Returns when `endDrain` has been called (end-of-stream or error on the bus), or after `limit`.
    func waitForDrain(within limit: Duration) async {
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.endDrain(generation: nil)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let over = state.withLock { state in
                if !state.drainOver { state.drainWaiter = continuation }
                return state.drainOver
            }
            if over { continuation.resume() }
        }
        timeout.cancel()
    }

    /// The drain of `generation` (nil: whichever) is over; wakes `finish`.
    func endDrain(generation: Int?) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            // A pipeline that fails while publishing is not a drain: only the one `finish` ended counts.
            if let generation {
                guard generation == state.generation, case .finished = state.phase else { return nil }
            }
            state.drainOver = true
            defer { state.drainWaiter = nil }
            return state.drainWaiter
        }
        waiter?.resume()
    }

    /// Runs `work` on `queue`, after whatever pipeline change is under way there.
    func onQueue(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                work()
                continuation.resume()
            }
        }
    }
}
