import CastlineKit
import Foundation
import HTTPClient
import StagePlugins
import Timing

/// `monitor --webhook URL`: each alarm event POSTed as its JSON line (`Content-Type:
/// application/json`), in order, retried with backoff while the endpoint fails. It is never in
/// the media's way: events wait in a queue of their own (past 1,000 waiting, the oldest go).
/// A webhook URL's path often is its secret (Slack's, Discord's): lines show only its origin.
final class AlarmWebhook: Sendable {
    let url: URL
    private let fetcher = HTTPFetcher(idleTimeout: .seconds(10))
    private let queue: AsyncStream<String>
    private let waiting: AsyncStream<String>.Continuation
    private let backoff = Backoff()

    init(url: URL) {
        self.url = url
        (queue, waiting) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1000))
    }

    /// The URL as lines show it: `https://hooks.example.com/****`.
    var shown: String { Secret.maskingPath(of: url) }

    /// Queues `event` when it is an alarm raised or cleared.
    func offer(_ event: RunEvent) {
        guard case .stage(let stageEvent) = event.kind, stageEvent.alarm != nil else { return }
        waiting.yield(EventJSON.line(event))
    }

    /// No more events: what waits is still delivered by `run`.
    func finish() { waiting.finish() }

    /// Delivers each event in turn until `finish` and the queue is empty.
    func run() async {
        for await line in queue { await deliver(line) }
    }

    /// One event, retried with backoff while the endpoint fails for a reason that may pass.
    private func deliver(_ line: String) async {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let problem: String
            do {
                let reply = try await fetcher.fetch("POST", url, headers: ["Content-Type": "application/json"], body: Data(line.utf8),
                                                    limit: 64 * 1024)
                if (200..<300).contains(reply.status) {
                    if attempt > 1 { Terminal.status("webhook \(shown): delivered after \(attempt - 1) retries") }
                    return
                }
                guard reply.status >= 500 || reply.status == 408 || reply.status == 429 else {
                    Terminal.status("webhook \(shown) refused an alarm with HTTP \(reply.status): not sent again (check the URL)")
                    return
                }
                problem = "answered HTTP \(reply.status)"
            } catch {
                problem = "failed (\(error.description.replacingOccurrences(of: url.absoluteString, with: shown)))"
            }
            let delay = backoff.delay(attempt: attempt, random: Double.random(in: 0..<1))
            Terminal.status("webhook \(shown) \(problem); retrying in \(String(format: "%.1f", delay.seconds)) s")
            try? await Task.sleep(for: delay)
        }
    }
}
