import Foundation
import GstKit

/// How a publish learns that its far end has the stream, and that it no longer takes it.
extension StreamPublisher {
    /// rtmp2sink and srtsink post no message when the far end takes the stream: only their
    /// stats say so. Read every 100 ms until connected, then every 500 ms (a listener's callers come and go).
    private static let connectingReadInterval: Duration = .milliseconds(100)
    private static let connectedReadInterval: Duration = .milliseconds(500)
    /// An attempt not connected by then has failed (an SRT caller refused without an error, a
    /// server that took the TCP connection and never answered).
    static let connectTimeout: Duration = .seconds(5)

    func observeConnection(generation: Int) {
        let began = ContinuousClock.now
        Task { [weak self] in
            while let self, let output = self.state.withLock({ $0.phase.live == generation ? $0.output : nil }) {
                // Read outside the lock: the property takes the element's own.
                let up = self.settings.output.isConnected(output)
                let lastHeard = up ? nil : self.settings.output.lastHeard(output)
                let progress = up ? self.settings.output.progress(output) : nil
                guard let next = self.observed(connected: up, lastHeard: lastHeard, progress: progress, generation: generation,
                                               began: began) else { return }
                try? await Task.sleep(for: next)
            }
        }
    }

    /// Folds one reading of the output's connection into the state; returns when to read again (nil: stop).
    private func observed(connected up: Bool, lastHeard: ContinuousClock.Instant?, progress: WriteProgress?, generation: Int,
                          began: ContinuousClock.Instant) -> Duration? {
        enum Outcome { case stop, again(Duration), timedOut, stoppedTaking(since: ContinuousClock.Instant, WriteProgress) }
        var change: ConnectionChange?
        let outcome: Outcome = state.withLock { state in
            guard state.phase.live == generation else { return .stop }
            let now = ContinuousClock.now
            if up {
                guard state.connectedSince == nil else {
                    if let progress, let since = state.farEnd.read(progress, mediaCame: state.mediaCame, at: now) {
                        return .stoppedTaking(since: since, progress)
                    }
                    return .again(Self.connectedReadInterval)
                }
                state.connectedSince = now
                // What waited while it connected goes out now: the far end has that much more (a
                // listener's output drops what comes before its caller instead).
                if !settings.output.waitsForCallers, let first = state.firstMedia, let latest = state.latestMedia {
                    state.publishedTime += latest.duration - first.duration
                }
                (state.firstMedia, state.latestMedia, state.waitingCounted) = (nil, nil, true)
                state.farEnd = FarEndWatch()
                state.lostAt = nil
                defer { state.everConnected = true; state.failedAttempts = 0 }
                if !state.everConnected {
                    change = .connected
                } else if !settings.output.waitsForCallers {
                    // A listener's next caller is not a reconnect: castline did not lose anything it could mend.
                    state.reconnects += 1
                    change = .reconnected(attempts: state.failedAttempts)
                }
                return .again(Self.connectedReadInterval)
            }
            // A listener whose last caller left, a far end gone quiet: the time with nobody is not published time.
            state.disconnected(at: lastHeard)
            if !settings.output.waitsForCallers, now - began >= Self.connectTimeout { return .timedOut }
            return .again(Self.connectingReadInterval)
        }
        if let change { context.connection(change) }
        switch outcome {
        case .stop: return nil
        case .again(let interval): return interval
        case .timedOut:
            failed(generation: generation, reason: nil)
            return nil
        case .stoppedTaking(let since, let progress):
            let unread = Double(progress.sent - min(progress.sent, progress.acked)) / 1_000_000
            failed(generation: generation, reason: String(format: "the server stopped taking the stream %.0f s ago; "
                + "%.2f MB sent that it has not acknowledged", (ContinuousClock.now - since).seconds, unread), since: since)
            return nil
        }
    }
}
