import CastlineKit
import Prometheus
import Synchronization

/// A load test's totals as Prometheus metrics (`--metrics` of `castline load`): viewers by state,
/// stalls, HTTP errors by status and bytes, and time to first frame and segment fetch times as
/// histograms, which sum across a fleet's shards (`histogram_quantile` over their buckets).
final class LoadMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let firstFrame: ValueHistogram
    private let fetch: ValueHistogram
    /// The totals last recorded, so counters rise by the difference.
    private let last = Mutex(LoadTotals())

    static let buckets = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32]

    init() {
        firstFrame = registry.makeValueHistogram(name: "castline_load_ttff_seconds", buckets: Self.buckets,
                                                 help: "Seconds from a viewer's start to its first frame")
        fetch = registry.makeValueHistogram(name: "castline_load_segment_fetch_seconds", buckets: Self.buckets,
                                            help: "Seconds a segment's fetch took")
    }

    func observe(_ observation: LoadTally.Observation) {
        switch observation {
        case .firstFrame(let seconds): firstFrame.record(seconds)
        case .segmentFetch(let seconds): fetch.record(seconds)
        }
    }

    func record(_ totals: LoadTotals) {
        for (state, count) in [("active", totals.active), ("started", totals.started), ("failed", totals.failed)] {
            registry.makeGauge(name: "castline_load_viewers", labels: [("state", state)]).set(Double(count))
        }
        let before = last.withLock { last -> LoadTotals in defer { last = totals }; return last }
        registry.makeCounter(name: "castline_load_stalls_total").increment(by: Int64(max(0, totals.stalls - before.stalls)))
        registry.makeCounter(name: "castline_load_stall_seconds_total").increment(by: max(0, totals.stalledSeconds - before.stalledSeconds))
        registry.makeCounter(name: "castline_load_bytes_total").increment(by: Int64(max(0, totals.bytes - before.bytes)))
        for (status, count) in totals.httpErrorsByStatus {
            registry.makeCounter(name: "castline_load_http_errors_total", labels: [("status", "\(status)")])
                .increment(by: Int64(max(0, count - (before.httpErrorsByStatus[status] ?? 0))))
        }
        registry.makeGauge(name: "castline_load_rebuffer_ratio").set(totals.rebufferRatio)
    }
}
