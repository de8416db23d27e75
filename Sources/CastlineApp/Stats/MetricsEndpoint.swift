import CastlineKit
import CoreMetrics
import Foundation
import Hummingbird
import Prometheus
import StagePlugins
import Synchronization

/// Stats figures as Prometheus metrics: `castline_<figure>` with `pipeline`,
/// `stage` and `stream` labels, recorded through swift-metrics into a
/// swift-prometheus registry of this run's own.
final class MetricsRecorder: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// Last total seen per counter, so counters rise by the difference.
    private let totals = Mutex<[String: Double]>([:])
    private let counters = Mutex<[String: CoreMetrics.Counter]>([:])
    private let gauges = Mutex<[String: CoreMetrics.Gauge]>([:])
    /// The gauges each stage and stream's last sample set: one its next sample leaves out (a level
    /// while no sound came) goes from the exposition, rather than keep a value no longer so.
    private let lastGauges = Mutex<[String: Set<String>]>([:])

    init() {
        factory = PrometheusMetricsFactory(registry: registry)
    }

    /// Figures that only ever rise become counters named `…_total`; the rest are gauges.
    static let counterNames: [String: String] = [
        "buffers": "castline_buffers_total",
        "bytes": "castline_bytes_total",
        "gaps": "castline_gaps_total",
        "discontinuities": "castline_discontinuities_total",
        "late_frames": "castline_late_frames_total",
        "dropped_frames": "castline_dropped_frames_total",
        "silences": "castline_silences_total",
        "reconnects": "castline_reconnects_total",
        "acked_bytes": "castline_acked_bytes_total",
        "acks_received": "castline_acks_received_total",
        "sent_bytes": "castline_sent_bytes_total",
        "packets_lost": "castline_packets_lost_total",
        "packets_retransmitted": "castline_packets_retransmitted_total",
        "nack_count": "castline_nacks_total",
        "pli_count": "castline_plis_total",
    ]

    /// The gauge name of a figure: `position_s` → `castline_position_seconds`, `rms_dbfs` → `castline_rms_dbfs`.
    static func gaugeName(_ figure: String) -> String {
        var name = figure
        if name.hasSuffix("_s") { name = String(name.dropLast(2)) + "_seconds" }
        let sanitized = name.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" }
        return "castline_" + String(sanitized)
    }

    /// What a run's event says to Prometheus: a stats sample's figures; an alarm raised or cleared
    /// as `castline_alarm_active{pipeline,kind}` (1 while raised) and `castline_alarm_raised_total`.
    func record(_ event: RunEvent) {
        switch event.kind {
        case .stats(let sample):
            record(sample, pipeline: event.pipeline)
        case .stage(let stageEvent):
            guard let (kind, raised) = stageEvent.alarm else { return }
            let labels = [("pipeline", event.pipeline), ("kind", kind)]
            gauge("castline_alarm_active", labels).record(raised ? 1 : 0)
            let counter = counter("castline_alarm_raised_total", labels)
            if raised { counter.increment(by: 1) }
        default:
            break
        }
    }

    private func gauge(_ name: String, _ labels: [(String, String)]) -> CoreMetrics.Gauge {
        Self.instrument(name, labels, in: gauges) { CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory) }
    }

    private func counter(_ name: String, _ labels: [(String, String)]) -> CoreMetrics.Counter {
        Self.instrument(name, labels, in: counters) { CoreMetrics.Counter(label: name, dimensions: labels, factory: factory) }
    }

    /// The one instrument of `name` and `labels`, made the first time it is asked for.
    private static func instrument<Instrument: Sendable>(_ name: String, _ labels: [(String, String)], in made: borrowing Mutex<[String: Instrument]>,
                                                        make: () -> Instrument) -> Instrument {
        let key = name + "{" + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
        return made.withLock { made in
            if let existing = made[key] { return existing }
            let instrument = make()
            made[key] = instrument
            return instrument
        }
    }

    func record(_ sample: StatsSample, pipeline: String) {
        let labels = [("pipeline", pipeline), ("stage", sample.stage), ("stream", sample.stream?.rawValue ?? "")]
        let labelKey = labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
        let present = Set(sample.figures.keys.filter { Self.counterNames[$0] == nil })
        let gone = lastGauges.withLock { last in
            defer { last[labelKey] = present }
            return (last[labelKey] ?? []).subtracting(present)
        }
        for figure in gone {
            let key = Self.gaugeName(figure) + "{" + labelKey + "}"
            gauges.withLock { $0.removeValue(forKey: key) }?.destroy()
        }
        for (figure, value) in sample.figures where value.isFinite {
            if let name = Self.counterNames[figure] {
                let key = name + "{" + labelKey + "}"
                let rise: Double = totals.withLock { totals in
                    defer { totals[key] = value }
                    return max(0, value - (totals[key] ?? 0))
                }
                let counter = counter(name, labels)
                if rise > 0 { counter.increment(by: Int64(rise.rounded())) }
            } else {
                gauge(Self.gaugeName(figure), labels).record(value)
            }
        }
    }

    /// The text exposition format, as `/metrics` serves it.
    func exposition() -> String { registry.emitToString() }
}

extension MetricsRecorder {
    /// `GET /metrics` over HTTP for the length of a run (`--metrics HOST:PORT`).
    func server(at endpoint: Endpoint) -> HTTPServer { Self.server(at: endpoint, registry: registry) }

    /// `GET /metrics`: `registry` in the text exposition format.
    static func server(at endpoint: Endpoint, registry: PrometheusCollectorRegistry) -> HTTPServer {
        let router = Router()
        router.get("metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: registry.emitToString())))
        }
        return HTTPServer(router.buildResponder(), endpoint: endpoint, flag: "--metrics", label: "castline.metrics")
    }
}
