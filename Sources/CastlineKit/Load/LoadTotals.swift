import Foundation

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
    /// Wall clock minus the `EXT-X-PROGRAM-DATE-TIME` of what each active viewer plays, where the
    /// playlist gives it: each viewer's (for histograms across a fleet), their percentiles and mean.
    public var liveLatencies: [Double] = []
    public var liveLatency: Percentiles? { Percentiles(liveLatencies) }
    public var liveLatencyMean: Double? { liveLatencies.isEmpty ? nil : liveLatencies.reduce(0, +) / Double(liveLatencies.count) }
    public var httpErrors = 0
    public var httpErrorsByStatus: [Int: Int] = [:]
    public var bytes = 0
    /// Active viewers by the variant they follow (a multivariant playlist's), and variant changes so far.
    public var renditions: [String: Int] = [:]
    public var renditionSwitches = 0

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
        if !renditions.isEmpty || renditionSwitches > 0 { figures["rendition_switches"] = Double(renditionSwitches) }
        for (rendition, count) in renditions { figures["viewers_rendition_" + Self.key(rendition)] = Double(count) }
        return figures
    }

    /// A rendition as a figure's name has it: `720p 1280x720 2500k` → `720p_1280x720_2500k`.
    static func key(_ rendition: String) -> String {
        rendition.lowercased().split { !($0.isLetter || $0.isNumber) }.joined(separator: "_")
    }

    /// One line for people: viewers, first frame, stalls, live latency, fetches, errors.
    public var line: String {
        var parts = ["viewers \(active) active, \(started) started, \(failed) failed"]
        if let firstFrame { parts.append(String(format: "first frame p50 %.3f s p95 %.3f s", firstFrame.p50, firstFrame.p95)) }
        parts.append(String(format: "stalls %d (%.1f s, %.2f %%)", stalls, stalledSeconds, rebufferRatio * 100))
        if let liveLatency { parts.append(String(format: "latency p50 %.2f s p95 %.2f s", liveLatency.p50, liveLatency.p95)) }
        if let fetch { parts.append(String(format: "fetch p95 %.3f s", fetch.p95)) }
        parts.append("http errors \(httpErrors)")
        return parts.joined(separator: "  ")
    }

    /// The progress block a terminal shows, refreshed in place: one figure per line, `planned`
    /// the viewers this process will start.
    public func block(planned: Int) -> [String] {
        func percentiles(_ value: Percentiles?) -> String {
            value.map { String(format: "p50 %.3f s   p95 %.3f s   p99 %.3f s", $0.p50, $0.p95, $0.p99) } ?? "-"
        }
        let errors = httpErrorsByStatus.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }
        let otherErrors = httpErrors - httpErrorsByStatus.values.reduce(0, +)
        return [String?]([
            "viewers       \(active) active (\(playingNow) playing, \(stalledNow) stalled)   \(started) of \(planned) started   \(failed) failed",
            "first frame   " + percentiles(firstFrame),
            String(format: "stalls        %d   %.1f s stalled   rebuffer ratio %.2f %%", stalls, stalledSeconds, rebufferRatio * 100),
            "live latency  " + (liveLatency.map { percentiles($0) } ?? "- (the playlist gives no EXT-X-PROGRAM-DATE-TIME)"),
            "fetch         " + percentiles(fetch) + String(format: "   %.1f MB", Double(bytes) / 1e6),
            renditions.isEmpty ? nil : "renditions    " + renditions.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }.joined(separator: ", ")
                + "   (\(renditionSwitches) switches)",
            "http errors   \(httpErrors)" + (errors.isEmpty && otherErrors == 0 ? "" : "   (" + (errors + (otherErrors > 0 ? ["\(otherErrors)× no answer"] : [])).joined(separator: ", ") + ")"),
        ]).compactMap { $0 }
    }
}
