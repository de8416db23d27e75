import CastlineKit
import CoreMetrics
import Foundation
import Hummingbird
import Logging
import Prometheus
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
        "sent_bytes": "castline_sent_bytes_total",
    ]

    /// The gauge name of a figure: `position_s` → `castline_position_seconds`, `rms_dbfs` → `castline_rms_dbfs`.
    static func gaugeName(_ figure: String) -> String {
        var name = figure
        if name.hasSuffix("_s") { name = String(name.dropLast(2)) + "_seconds" }
        let sanitized = name.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" }
        return "castline_" + String(sanitized)
    }

    func record(_ sample: StatsSample, pipeline: String) {
        let labels = [("pipeline", pipeline), ("stage", sample.stage), ("stream", sample.stream?.rawValue ?? "")]
        let labelKey = labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
        for (figure, value) in sample.figures where value.isFinite {
            if let name = Self.counterNames[figure] {
                let key = name + "{" + labelKey + "}"
                let rise: Double = totals.withLock { totals in
                    defer { totals[key] = value }
                    return max(0, value - (totals[key] ?? 0))
                }
                let counter = counters.withLock { counters in
                    if let existing = counters[key] { return existing }
                    let made = CoreMetrics.Counter(label: name, dimensions: labels, factory: factory)
                    counters[key] = made
                    return made
                }
                if rise > 0 { counter.increment(by: Int64(rise.rounded())) }
            } else {
                let name = Self.gaugeName(figure)
                let key = name + "{" + labelKey + "}"
                let gauge = gauges.withLock { gauges in
                    if let existing = gauges[key] { return existing }
                    let made = CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory)
                    gauges[key] = made
                    return made
                }
                gauge.record(value)
            }
        }
    }

    /// The text exposition format, as `/metrics` serves it.
    func exposition() -> String { registry.emitToString() }
}

/// `GET /metrics` over HTTP for the length of a run (Hummingbird, which the
/// control API will share).
final class MetricsServer: Sendable {
    private let task: Task<Void, Never>

    private init(task: Task<Void, Never>) {
        self.task = task
    }

    /// Returns once the server listens; throws when it cannot (port taken, bad host).
    static func start(host: String, port: Int, recorder: MetricsRecorder) async throws -> MetricsServer {
        let router = Router()
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: recorder.exposition())))
        }
        let task = try await LoopbackHTTP.serve(router.buildResponder(), host: host, port: port, label: "castline.metrics")
        return MetricsServer(task: task)
    }

    func stop() { task.cancel() }
}

/// A result delivered once, to one waiter, whichever comes first.
final class OneShot: Sendable {
    private let state = Mutex<(result: Result<Void, any Error>?, waiter: CheckedContinuation<Void, any Error>?)>((nil, nil))

    func resume(with result: Result<Void, any Error>) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready: Result<Void, any Error>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

/// Starts a Hummingbird server for the length of a run: the one way castline serves
/// HTTP (`--metrics`, `--control`). Returns once it listens; throws when it cannot.
enum LoopbackHTTP {
    static func serve(
        _ responder: some HTTPResponder<BasicRequestContext>, host: String, port: Int, label: String
    ) async throws -> Task<Void, Never> {
        // Hummingbird's own log lines would land on stdout, which may be carrying JSON lines.
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical  // stopping it at the end of a run logs harmless errors
        let started = OneShot()
        let application = Application(
            responder: responder,
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { _ in started.resume(with: .success(())) },
            logger: logger)
        let task = Task {
            do {
                // No signals: Ctrl-C belongs to the run, which stops this task when it ends.
                try await application.runService(gracefulShutdownSignals: [])
            } catch {
                started.resume(with: .failure(error))
            }
        }
        do {
            try await started.wait()
        } catch {
            task.cancel()
            throw error
        }
        return task
    }
}
