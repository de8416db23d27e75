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
    /// Whether the behind-live buckets are served now (made once some latency is known, taken away once none is).
    private let behindLiveServed = Mutex(false)

    static let buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32]
    /// Live latency's bucket bounds: from a low-latency stream's 2 s to a minute behind.
    static let latencyBuckets = [1.0, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 60]

    /// `castline_load_NAME_UNIT`.
    static func name(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "castline", subsystem: "load", metricName: name, unitName: unit, helpText: help)
    }

    init() {
        firstFrame = registry.makeValueHistogram(descriptor: Self.name("ttff", "seconds", "Seconds from a viewer's start to its first frame"),
                                                 buckets: Self.buckets)
        fetch = registry.makeValueHistogram(descriptor: Self.name("segment_fetch", "seconds", "Seconds a segment's fetch took"),
                                            buckets: Self.buckets)
    }

    func observe(_ observation: LoadTally.Observation) {
        switch observation {
        case .firstFrame(let seconds): firstFrame.record(seconds)
        case .segmentFetch(let seconds): fetch.record(seconds)
        }
    }

    func record(_ totals: LoadTotals) {
        let viewers = Self.name("viewers", "", "Viewers active (of them playing and stalled now), started and failed")
        for (state, count) in [("active", totals.active), ("playing", totals.playingNow), ("stalled", totals.stalledNow),
                               ("started", totals.started), ("failed", totals.failed)] {
            registry.makeGauge(descriptor: viewers, labels: [("state", state)]).set(Double(count))
        }
        let before = last.withLock { last -> LoadTotals in defer { last = totals }; return last }
        registry.makeCounter(descriptor: Self.name("stalls", "total", "Stalls: a viewer's buffer ran dry"))
            .increment(by: Int64(max(0, totals.stalls - before.stalls)))
        registry.makeCounter(descriptor: Self.name("stall_seconds", "total", "Seconds viewers spent stalled"))
            .increment(by: max(0, totals.stalledSeconds - before.stalledSeconds))
        registry.makeCounter(descriptor: Self.name("bytes", "total", "Bytes of segments fetched"))
            .increment(by: Int64(max(0, totals.bytes - before.bytes)))
        let errors = Self.name("http_errors", "total", "Failed requests, by HTTP status")
        for (status, count) in totals.httpErrorsByStatus {
            registry.makeCounter(descriptor: errors, labels: [("status", "\(status)")])
                .increment(by: Int64(max(0, count - (before.httpErrorsByStatus[status] ?? 0))))
        }
        registry.makeGauge(descriptor: Self.name("rebuffer_ratio", "", "Stalled time over stalled and played time")).set(totals.rebufferRatio)
        // A histogram of now, not of all time: viewers at most `le` seconds behind live, as gauges
        // shaped as buckets, so `histogram_quantile` over their sum reads a fleet's percentiles.
        // Only while some viewer's latency is known: zeros would say nobody is behind.
        let behind = Self.name("viewers_behind_live", "seconds",
                               "Active viewers at most le seconds behind live, of those whose playlist gives EXT-X-PROGRAM-DATE-TIME")
        let known = !totals.liveLatencies.isEmpty
        guard behindLiveServed.withLock({ served in defer { served = known }; return served || known }) else { return }
        for (label, bound) in Self.latencyBuckets.map({ ("\($0)", $0) }) + [("+Inf", .infinity)] {
            let gauge = registry.makeGauge(descriptor: behind, labels: [("le", label)])
            if known { gauge.set(Double(totals.liveLatencies.count { $0 <= bound })) } else { registry.unregisterGauge(gauge) }
        }
    }
}
