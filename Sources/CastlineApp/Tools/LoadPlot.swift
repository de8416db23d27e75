import CastlineKit
import Foundation
import Synchronization

/// `castline load --stats-plot FILE`: the test over time, one reading a second, drawn by
/// `StatsPlot`: viewers active, stalled and failed; stalls so far; time to first frame; the live
/// latency where the playlist gives programme times. The summary line under the title.
final class LoadPlot: Sendable {
    private let readings = Mutex<[(second: Double, totals: LoadTotals)]>([])

    func add(_ totals: LoadTotals, at second: Double) {
        var reading = totals
        reading.liveLatencies = []  // drawn as percentiles; a long test need not keep each viewer's
        readings.withLock { $0.append((second, reading)) }
    }

    func svg(title: String, summary: String) -> String {
        let readings = readings.withLock { $0 }
        func series(_ name: String, _ value: (LoadTotals) -> Double?) -> (name: String, points: [PlotData.Point])? {
            let points = readings.compactMap { reading in value(reading.totals).map { PlotData.Point(time: reading.second, value: $0) } }
            return points.isEmpty ? nil : (name, points)
        }
        func panel(_ id: String, _ label: String, _ series: [(name: String, points: [PlotData.Point])?]) -> StatsPlot.Panel {
            let present = series.compactMap { $0 }
            return StatsPlot.Panel(id: id, label: label, series: present, values: StatsPlot.Axis(low: 0, high: StatsPlot.highest(present)))
        }
        var panels = [
            panel("viewers", "viewers", [series("active") { Double($0.active) }, series("playing") { Double($0.playingNow) },
                                         series("stalled") { Double($0.stalledNow) }, series("failed") { Double($0.failed) }]),
            panel("stalls", "stalls so far", [series("stalls") { Double($0.stalls) }]),
            panel("ttff", "time to first frame (s)", [series("p50") { $0.firstFrame?.p50 }, series("p95") { $0.firstFrame?.p95 }]),
        ]
        if readings.contains(where: { $0.totals.liveLatency != nil }) {
            panels.append(panel("latency", "live latency (s)", [series("p50") { $0.liveLatency?.p50 }, series("p95") { $0.liveLatency?.p95 }]))
        }
        let end = max(readings.last?.second ?? 0, 1)
        return StatsPlot.svg(panels, title: title, subtitle: summary, time: StatsPlot.Axis(low: 0, high: end))
    }

    /// The URL as the report's title shows it: no user, password, query or fragment (where tokens go).
    static func shown(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return Secret.maskingPath(of: url) }
        (parts.user, parts.password, parts.query, parts.fragment) = (nil, nil, nil, nil)
        return parts.string ?? Secret.maskingPath(of: url)
    }
}
