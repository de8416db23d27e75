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
        var fetchSeconds: [Double] = []
        var bytes = 0
        var errors: [Int?] = []
    }

    /// What happens to a viewer, as it happens (for histograms, which a total cannot fill).
    public enum Observation: Sendable {
        /// Seconds from its start to its first frame.
        case firstFrame(Double)
        /// Seconds a segment's fetch took.
        case segmentFetch(Double)
    }

    private let viewers = Mutex<[Int: Viewer]>([:])
    private let observe: (@Sendable (Observation) -> Void)?

    public init(observe: (@Sendable (Observation) -> Void)? = nil) {
        self.observe = observe
    }

    func started(_ number: Int, at time: ContinuousClock.Instant) {
        viewers.withLock { $0[number] = Viewer(began: time) }
    }

    func failed(_ number: Int, reason: String, status: Int?) {
        viewers.withLock {
            $0[number]?.failed = reason
            $0[number]?.errors.append(status)
        }
    }

    func fetched(_ number: Int, buffer: ViewerBuffer, seconds: Double, bytes: Int) {
        let first = viewers.withLock { viewers -> Bool in
            let first = viewers[number]?.buffer?.firstFrame == nil
            viewers[number]?.buffer = buffer
            viewers[number]?.fetchSeconds.append(seconds)
            viewers[number]?.bytes += bytes
            return first
        }
        if first, let time = buffer.firstFrame { observe?(.firstFrame(time)) }
        observe?(.segmentFetch(seconds))
    }

    func trouble(_ number: Int, status: Int?) {
        viewers.withLock { $0[number]?.errors.append(status) }
    }

    func finished(_ number: Int) {
        viewers.withLock { $0[number]?.finished = true }
    }

    /// The first failure's reason, for a line that says why viewers failed.
    public var firstFailure: String? {
        viewers.withLock { viewers in viewers.sorted { $0.key < $1.key }.lazy.compactMap(\.value.failed).first }
    }

    /// The running totals at `now`, under the names `--stats-json` gives them.
    public func totals(at now: ContinuousClock.Instant = .now) -> LoadTotals {
        viewers.withLock { viewers in
            var totals = LoadTotals()
            var firstFrames: [Double] = [], fetches: [Double] = []
            var played = 0.0
            for viewer in viewers.values {
                totals.started += 1
                if viewer.failed != nil { totals.failed += 1 } else if !viewer.finished { totals.active += 1 }
                totals.bytes += viewer.bytes
                fetches += viewer.fetchSeconds
                for status in viewer.errors {
                    totals.httpErrors += 1
                    if let status { totals.httpErrorsByStatus[status, default: 0] += 1 }
                }
                guard var buffer = viewer.buffer else { continue }
                let time = (now - viewer.began).seconds
                if !viewer.finished { buffer.advance(to: time) }
                if let first = buffer.firstFrame { firstFrames.append(first) }
                totals.stalls += buffer.stalls
                totals.stalledSeconds += buffer.stalledSeconds(at: time)
                played += buffer.played
            }
            totals.firstFrame = Percentiles(firstFrames)
            totals.fetch = Percentiles(fetches)
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
}

/// A load test's running totals.
public struct LoadTotals: Sendable, Equatable {
    public var started = 0, active = 0, failed = 0
    public var stalls = 0
    public var stalledSeconds = 0.0
    /// Stalled time over stalled and played time.
    public var rebufferRatio = 0.0
    public var firstFrame: Percentiles?
    public var fetch: Percentiles?
    public var httpErrors = 0
    public var httpErrorsByStatus: [Int: Int] = [:]
    public var bytes = 0

    public init() {}

    /// Under the names `--stats-json` carries (seconds in `_s`).
    public var figures: [String: Double] {
        var figures: [String: Double] = [
            "viewers_started": Double(started), "viewers_active": Double(active), "viewers_failed": Double(failed),
            "stalls": Double(stalls), "stall_s": stalledSeconds, "rebuffer_ratio": rebufferRatio,
            "http_errors": Double(httpErrors), "bytes": Double(bytes),
        ]
        if let firstFrame { (figures["ttff_p50_s"], figures["ttff_p95_s"], figures["ttff_p99_s"]) = (firstFrame.p50, firstFrame.p95, firstFrame.p99) }
        if let fetch { (figures["fetch_p50_s"], figures["fetch_p95_s"], figures["fetch_p99_s"]) = (fetch.p50, fetch.p95, fetch.p99) }
        for (status, count) in httpErrorsByStatus { figures["http_errors_\(status)"] = Double(count) }
        return figures
    }

    /// One line for people: viewers, first frame, stalls, fetches, errors.
    public var line: String {
        var parts = ["viewers \(active) active, \(started) started, \(failed) failed"]
        if let firstFrame { parts.append(String(format: "first frame p50 %.2f s p95 %.2f s", firstFrame.p50, firstFrame.p95)) }
        parts.append(String(format: "stalls %d (%.1f s, %.2f %%)", stalls, stalledSeconds, rebufferRatio * 100))
        if let fetch { parts.append(String(format: "fetch p95 %.2f s", fetch.p95)) }
        parts.append("http errors \(httpErrors)")
        return parts.joined(separator: "  ")
    }
}
