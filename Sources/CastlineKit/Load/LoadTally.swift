import Foundation
import Synchronization

/// What every viewer of a load test has seen so far, and the running totals read from it: each
/// viewer writes its own slot as things happen; a reading brings each viewer's buffer up to now,
/// so a stall under way counts as it lasts.
public final class LoadTally: Sendable {
    struct Viewer {
        var began: ContinuousClock.Instant
        var buffer: ViewerBuffer?
        var failed: String?
        var finished = false
        var bytes = 0
        var errors: [Int?] = []
    }

    struct State {
        var viewers: [Int: Viewer] = [:]
        /// Every segment fetch's seconds, of all viewers.
        var fetches = SecondsHistogram()
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

    func started(_ number: Int, at time: ContinuousClock.Instant) {
        state.withLock { $0.viewers[number] = Viewer(began: time) }
    }

    func failed(_ number: Int, reason: String, status: Int?) {
        state.withLock {
            $0.viewers[number]?.failed = reason
            $0.viewers[number]?.errors.append(status)
        }
    }

    func fetched(_ number: Int, buffer: ViewerBuffer, seconds: Double, bytes: Int) {
        let first = state.withLock { state -> Bool in
            let first = state.viewers[number]?.buffer?.firstFrame == nil
            state.viewers[number]?.buffer = buffer
            state.viewers[number]?.bytes += bytes
            state.fetches.record(seconds)
            return first
        }
        if first, let time = buffer.firstFrame { observe?(.firstFrame(time)) }
        observe?(.segmentFetch(seconds))
    }

    func trouble(_ number: Int, status: Int?) {
        state.withLock { $0.viewers[number]?.errors.append(status) }
    }

    func finished(_ number: Int) {
        state.withLock { $0.viewers[number]?.finished = true }
    }

    /// The first failure's reason, for a line that says why viewers failed.
    public var firstFailure: String? {
        state.withLock { $0.viewers.sorted { $0.key < $1.key }.lazy.compactMap(\.value.failed).first }
    }

    /// The running totals at `now` (`wall` on the wall clock, for the live latency).
    public func totals(at now: ContinuousClock.Instant = .now, wall: Date = Date()) -> LoadTotals {
        state.withLock { state in
            var totals = LoadTotals()
            var firstFrames: [Double] = [], latencies: [Double] = []
            var played = 0.0
            for viewer in state.viewers.values {
                totals.started += 1
                let active = viewer.failed == nil && !viewer.finished
                if viewer.failed != nil { totals.failed += 1 } else if active { totals.active += 1 }
                totals.bytes += viewer.bytes
                for status in viewer.errors {
                    totals.httpErrors += 1
                    if let status { totals.httpErrorsByStatus[status, default: 0] += 1 }
                }
                guard var buffer = viewer.buffer else { continue }
                let time = (now - viewer.began).seconds
                if !viewer.finished { buffer.advance(to: time) }
                if let first = buffer.firstFrame { firstFrames.append(first) }
                if active, buffer.isStalled { totals.stalledNow += 1 }
                if active, buffer.firstFrame != nil, !buffer.isStalled { totals.playingNow += 1 }
                if active, let date = buffer.programDateTime { latencies.append(wall.timeIntervalSince(date)) }
                totals.stalls += buffer.stalls
                totals.stalledSeconds += buffer.stalledSeconds(at: time)
                played += buffer.played
            }
            totals.firstFrame = Percentiles(firstFrames)
            totals.fetch = Percentiles(state.fetches)
            totals.liveLatency = Percentiles(latencies)
            totals.liveLatencyMean = latencies.isEmpty ? nil : latencies.reduce(0, +) / Double(latencies.count)
            totals.rebufferRatio = totals.stalledSeconds + played > 0 ? totals.stalledSeconds / (totals.stalledSeconds + played) : 0
            return totals
        }
    }
}

/// The 50th, 95th and 99th percentiles of some seconds (nearest rank); nil when there are none.
public struct Percentiles: Sendable, Equatable {
    public var p50: Double, p95: Double, p99: Double

    public init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ share: Double) -> Double { sorted[min(sorted.count - 1, max(0, Int((share * Double(sorted.count)).rounded(.up)) - 1))] }
        (p50, p95, p99) = (rank(0.50), rank(0.95), rank(0.99))
    }

    public init?(_ histogram: SecondsHistogram) {
        guard let p50 = histogram.percentile(0.50), let p95 = histogram.percentile(0.95), let p99 = histogram.percentile(0.99) else { return nil }
        (self.p50, self.p95, self.p99) = (p50, p95, p99)
    }
}

/// A load test's running totals.
public struct LoadTotals: Sendable, Equatable {
    public var started = 0, active = 0, failed = 0
    public var stalls = 0
    /// Active viewers stalled at the reading, and playing (past their first frame, not stalled).
    public var stalledNow = 0, playingNow = 0
    public var stalledSeconds = 0.0
    /// Stalled time over stalled and played time.
    public var rebufferRatio = 0.0
    public var firstFrame: Percentiles?
    public var fetch: Percentiles?
    /// Wall clock minus the `EXT-X-PROGRAM-DATE-TIME` of what each active viewer plays, where the playlist gives it.
    public var liveLatency: Percentiles?
    public var liveLatencyMean: Double?
    public var httpErrors = 0
    public var httpErrorsByStatus: [Int: Int] = [:]
    public var bytes = 0

    public init() {}

    /// Under the names `--stats-json` carries (seconds in `_s`).
    public var figures: [String: Double] {
        var figures: [String: Double] = [
            "viewers_started": Double(started), "viewers_active": Double(active), "viewers_failed": Double(failed),
            "stalls": Double(stalls), "viewers_stalled": Double(stalledNow),
            "viewers_playing": Double(playingNow), "stall_s": stalledSeconds, "rebuffer_ratio": rebufferRatio,
            "http_errors": Double(httpErrors), "bytes": Double(bytes),
        ]
        if let firstFrame { (figures["ttff_p50_s"], figures["ttff_p95_s"], figures["ttff_p99_s"]) = (firstFrame.p50, firstFrame.p95, firstFrame.p99) }
        if let fetch { (figures["fetch_p50_s"], figures["fetch_p95_s"], figures["fetch_p99_s"]) = (fetch.p50, fetch.p95, fetch.p99) }
        if let liveLatency {
            (figures["latency_p50_s"], figures["latency_p95_s"], figures["latency_p99_s"]) = (liveLatency.p50, liveLatency.p95, liveLatency.p99)
        }
        if let liveLatencyMean { figures["latency_mean_s"] = liveLatencyMean }
        for (status, count) in httpErrorsByStatus { figures["http_errors_\(status)"] = Double(count) }
        return figures
    }

    /// One line for people: viewers, first frame, stalls, live latency, fetches, errors.
    public var line: String {
        var parts = ["viewers \(active) active, \(started) started, \(failed) failed"]
        if let firstFrame { parts.append(String(format: "first frame p50 %.2f s p95 %.2f s", firstFrame.p50, firstFrame.p95)) }
        parts.append(String(format: "stalls %d (%.1f s, %.2f %%)", stalls, stalledSeconds, rebufferRatio * 100))
        if let liveLatency { parts.append(String(format: "latency p50 %.2f s p95 %.2f s", liveLatency.p50, liveLatency.p95)) }
        if let fetch { parts.append(String(format: "fetch p95 %.2f s", fetch.p95)) }
        parts.append("http errors \(httpErrors)")
        return parts.joined(separator: "  ")
    }

    /// The progress block a terminal shows, refreshed in place: one figure per line, `planned`
    /// the viewers this process will start.
    public func block(planned: Int) -> [String] {
        func percentiles(_ value: Percentiles?) -> String {
            value.map { String(format: "p50 %.2f s   p95 %.2f s   p99 %.2f s", $0.p50, $0.p95, $0.p99) } ?? "-"
        }
        let errors = httpErrorsByStatus.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }
        let otherErrors = httpErrors - httpErrorsByStatus.values.reduce(0, +)
        return [
            "viewers       \(active) active (\(playingNow) playing, \(stalledNow) stalled)   \(started) of \(planned) started   \(failed) failed",
            "first frame   " + percentiles(firstFrame),
            String(format: "stalls        %d   %.1f s stalled   rebuffer ratio %.2f %%", stalls, stalledSeconds, rebufferRatio * 100),
            "live latency  " + (liveLatency == nil ? "- (the playlist gives no EXT-X-PROGRAM-DATE-TIME)" : percentiles(liveLatency)),
            "fetch         " + percentiles(fetch) + String(format: "   %.1f MB", Double(bytes) / 1e6),
            "http errors   \(httpErrors)" + (errors.isEmpty && otherErrors == 0 ? "" : "   (" + (errors + (otherErrors > 0 ? ["\(otherErrors)× no answer"] : [])).joined(separator: ", ") + ")"),
        ]
    }
}
