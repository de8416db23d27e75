import CastlineKit
import Foundation
import Synchronization

/// `castline load --stats-plot FILE`: the test over time, one reading a second, drawn by
/// `StatsPlot`: viewers active, stalled and failed; stalls so far; time to first frame; the live
/// latency where the playlist gives programme times. The summary line under the title.
final class LoadPlot: Sendable {
    /// What is drawn: each panel's series and how a reading gives their values. A panel marked
    /// `optional` is left out when no reading had a value for it.
    private struct Panel {
        var id: String, label: String
        var optional = false
        var series: [(name: String, value: @Sendable (LoadTotals) -> Double?)]
    }
    private static let panels = [
        Panel(id: "viewers", label: "viewers", series: [("active", { Double($0.active) }), ("playing", { Double($0.playingNow) }),
                                                        ("stalled", { Double($0.stalledNow) }), ("failed", { Double($0.failed) })]),
        Panel(id: "stalls", label: "stalls so far", series: [("stalls", { Double($0.stalls) })]),
        Panel(id: "ttff", label: "time to first frame (s)", series: [("p50", { $0.firstFrame?.p50 }), ("p95", { $0.firstFrame?.p95 })]),
        Panel(id: "latency", label: "live latency (s)", optional: true,
              series: [("p50", { $0.liveLatency?.p50 }), ("p95", { $0.liveLatency?.p95 })]),
    ]

    /// Each reading's second and the values drawn of it, per panel of `panels` (not the whole
    /// totals: a long test need not keep every viewer's latency of every second).
    private let readings = Mutex<[(second: Double, values: [[Double?]])]>([])

    func add(_ totals: LoadTotals, at second: Double) {
        let values = Self.panels.map { $0.series.map { $0.value(totals) } }
        readings.withLock { $0.append((second, values)) }
    }

    func svg(title: String, summary: String) -> String {
        let readings = readings.withLock { $0 }
        var drawn: [StatsPlot.Panel] = []
        for (number, panel) in Self.panels.enumerated() {
            let series = panel.series.indices.compactMap { index -> (name: String, points: [PlotData.Point])? in
                let points = readings.compactMap { reading in reading.values[number][index].map { PlotData.Point(time: reading.second, value: $0) } }
                return points.isEmpty ? nil : (panel.series[index].name, points)
            }
            if panel.optional, series.isEmpty { continue }
            drawn.append(StatsPlot.Panel(id: panel.id, label: panel.label, series: series,
                                         values: StatsPlot.Axis(low: 0, high: StatsPlot.highest(series))))
        }
        let end = max(readings.last?.second ?? 0, 1)
        return StatsPlot.svg(drawn, title: title, subtitle: summary, time: StatsPlot.Axis(low: 0, high: end))
    }

    /// The URL as the report's title shows it: no user, password, query or fragment (where tokens go).
    static func shown(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return Secret.maskingPath(of: url) }
        (parts.user, parts.password, parts.query, parts.fragment) = (nil, nil, nil, nil)
        return parts.string ?? Secret.maskingPath(of: url)
    }
}
