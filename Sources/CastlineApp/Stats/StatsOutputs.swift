import CastlineKit
import Foundation

/// Every stats output of a run, fed from the one event stream: JSON lines,
/// Prometheus metrics, the plot, and the summary printed at the end.
final class StatsOutputs {
    private let pipeline: String
    private let json: FileHandle?
    private let jsonPath: String?
    /// A write to `json` failed (said once).
    private var jsonFailed = false
    private let closeJSON: Bool
    private let metrics: MetricsRecorder?
    /// `--metrics`: served by the run's group, fed from here.
    let metricsServer: HTTPServer?
    private let plotPath: String?
    private let latencyLines: Bool
    /// One summary per pipeline, in the order they first reported.
    private var summaries: [(pipeline: String, summary: RunSummary)] = []
    private var plot = PlotData()

    private init(pipeline: String, json: FileHandle?, jsonPath: String?, closeJSON: Bool, metrics: MetricsRecorder?,
                 metricsServer: HTTPServer?, plotPath: String?, latencyLines: Bool) {
        self.pipeline = pipeline
        self.json = json
        self.jsonPath = jsonPath
        self.closeJSON = closeJSON
        self.metrics = metrics
        self.metricsServer = metricsServer
        self.plotPath = plotPath
        self.latencyLines = latencyLines
    }

    /// Opens the JSON file before the run (the metrics server starts with the run's group), so a
    /// bad path or a taken port stops it before any media flows.
    static func open(_ options: StatsSettings, pipeline: String) throws -> StatsOutputs {
        let json = try options.json.map(openJSON)
        if let plot = options.plot { try createPlot(plot) }
        let closeJSON = options.json != nil && options.json != "-"
        var recorder: MetricsRecorder?
        var server: HTTPServer?
        if let text = options.metrics, let endpoint = Endpoint(text) {
            let made = MetricsRecorder()
            server = made.server(at: endpoint)
            recorder = made
        }
        return StatsOutputs(pipeline: pipeline, json: json, jsonPath: options.json, closeJSON: closeJSON, metrics: recorder,
                            metricsServer: server, plotPath: options.plot, latencyLines: options.latencyLines)
    }

    /// `--stats-json`'s output: stdout for `-`, else the file, made empty.
    static func openJSON(_ path: String) throws(SettingsError) -> FileHandle {
        if path == "-" { return .standardOutput }
        return try SettingsError.openForWriting(path, option: "--stats-json")
    }

    /// `--stats-plot`'s file, made (empty) before the run: a path it cannot write is said at the
    /// start, not after the run it would have drawn.
    static func createPlot(_ path: String) throws(SettingsError) {
        let made = try SettingsError.openForWriting(path, option: "--stats-plot")
        try? made.close()
    }

    func consume(_ event: RunEvent) {
        if let json, !json.writeDiscardingErrors(Data((EventJSON.line(event) + "\n").utf8)), !jsonFailed {
            // Said once, and again in the summary: the lines from here on are lost.
            jsonFailed = true
            Terminal.status("--stats-json: cannot write to \(jsonPath ?? "-") (a full disk, or nothing reads it): the lines from here on are lost")
        }
        if let index = summaries.firstIndex(where: { $0.pipeline == event.pipeline }) {
            summaries[index].summary.add(event)
        } else {
            var summary = RunSummary()
            summary.add(event)
            summaries.append((event.pipeline, summary))
        }
        plot.add(event)
        metrics?.record(event)
        if case .stats(let sample) = event.kind {
            // Written at once, not when a buffer fills: someone is watching these as they come.
            if latencyLines, let line = Self.latencyLine(sample, at: event.time) { FileHandle.standardOutput.writeDiscardingErrors(Data((line + "\n").utf8)) }
        }
    }

    /// `castline latency`'s line for a latency stage's sample: the time, then each figure it has.
    static func latencyLine(_ sample: StatsSample, at time: Date) -> String? {
        let figures = sample.figures
        var parts: [String] = []
        if let sound = figures[figure: DeclaredFigures.audioLatency] { parts.append(String(format: "sound %.3f s", sound)) }
        if let picture = figures[figure: DeclaredFigures.videoLatency] { parts.append(String(format: "picture %.3f s", picture)) }
        guard !parts.isEmpty else { return nil }
        if let offset = figures[figure: DeclaredFigures.avOffset] { parts.append(String(format: "a/v %+.1f ms", offset)) }
        let clock = time.formatted(.iso8601.time(includingFractionalSeconds: true))
        return "\(clock)  latency: " + parts.joined(separator: ", ")
    }

    /// Writes the plot, stops the server, closes the JSON file; returns the summary for stderr.
    func finish() -> [String] {
        // With several pipelines (`run a.yaml b.yaml`), each summary line carries its pipeline's name.
        var lines = summaries.count == 1
            ? summaries.flatMap { $0.summary.lines() }
            : summaries.flatMap { entry in entry.summary.lines().map { "[\(entry.pipeline)] \($0)" } }
        if let plotPath {
            let svg = StatsPlot.svg(plot, title: "castline: \(pipeline)")
            do {
                try Data(svg.utf8).write(to: URL(fileURLWithPath: plotPath))
                lines.append("plot: \(plotPath)")
            } catch {
                lines.append("--stats-plot: cannot write \(plotPath): \(error.localizedDescription)")
            }
        }
        if closeJSON { try? json?.close() }
        if jsonFailed { lines.append("--stats-json: not every line was written to \(jsonPath ?? "-")") }
        return lines
    }
}

/// What the summary at the end of a run says: duration, bytes, bitrates,
/// buffering time, reconnects, silences.
struct RunSummary {
    private struct Stream {
        var bytes = RunningTotal()
        /// Each interval that carried media: its bytes and its bitrate (per second of that media).
        /// One that carried none (a pause, a stall, after the stream's end) has no bitrate.
        var carried: [(bytes: Double, kbps: Double)] = []
    }

    /// A counter's total over the run: a stage or sink a swap made anew counts from 0 again
    /// (its count falls), and what the one before it counted is kept.
    struct RunningTotal {
        private var before = 0.0
        private var latest = 0.0

        var total: Double { before + latest }

        mutating func observe(_ count: Double) {
            if count < latest { before += latest }
            latest = count
        }
    }

    private var first: Date?
    private var last: Date?
    private var streams: [String: Stream] = [:]
    private var order: [String] = []
    private var bufferingSince: Date?
    private var buffering: TimeInterval = 0
    /// Each publisher's reconnects so far, by its sink's name.
    private var reconnects: [String: Double] = [:]
    private var reconnectStates = 0
    /// Silences counted, once a stage measured levels at all (nil: nothing did, and none is claimed).
    /// Silences so far, by `stage stream`, as the stages that hear them count them.
    private var silenceCounts: [String: Double]?
    private var silences: Int? { silenceCounts.map { Int($0.values.reduce(0, +)) } }

    /// A stage's count of silences on a stream, from its samples and its `silence` events alike.
    private mutating func countSilences(_ figures: [String: Double], key: String) {
        guard let count = figures[figure: DeclaredFigures.silences] else { return }
        var counts = silenceCounts ?? [:]
        counts[key] = max(counts[key] ?? 0, count)
        silenceCounts = counts
    }
    /// Each publisher's bytes sent and what its far end confirmed, by its sink's name, in the order they spoke.
    private var publishers: [(stage: String, sent: RunningTotal, acked: RunningTotal?, acks: RunningTotal?)] = []
    /// A latency stage's readings: audio and video latency (s), A/V offset (ms).
    private var latencies: [String: [Double]] = [:]

    mutating func add(_ event: RunEvent) {
        if first == nil { first = event.time }
        last = event.time
        switch event.kind {
        case .stats(let sample):
            add(sample)
        case .stage(let stageEvent):
            if let stream = stageEvent.stream { countSilences(stageEvent.figures, key: "\(stageEvent.stage) \(stream)") }
        case .stateChanged(_, .buffering):
            bufferingSince = bufferingSince ?? event.time
        case .stateChanged(_, let to):
            if to == .reconnecting { reconnectStates += 1 }
            endBuffering(at: event.time)
        case .buffering(let percent):
            // Live media buffers without a state change: the percentages tell.
            if percent < 100 { bufferingSince = bufferingSince ?? event.time } else { endBuffering(at: event.time) }
        default:
            break
        }
    }

    private mutating func endBuffering(at time: Date) {
        if let since = bufferingSince { buffering += time.timeIntervalSince(since) }
        bufferingSince = nil
    }

    private mutating func add(_ sample: StatsSample) {
        if let stream = sample.stream { countSilences(sample.figures, key: "\(sample.stage) \(stream)") }
        if let count = sample.figures[StatsFigure.reconnects] { reconnects[sample.stage] = max(reconnects[sample.stage] ?? 0, count) }
        if let sent = sample.figures[StatsFigure.sentBytes] {
            let index = publishers.firstIndex { $0.stage == sample.stage } ?? publishers.endIndex
            if index == publishers.endIndex { publishers.append((sample.stage, RunningTotal(), nil, nil)) }
            publishers[index].sent.observe(sent)
            // RTMP acknowledges bytes, SRT sends ACK packets: each has its own figure, or none.
            if let acked = sample.figures[StatsFigure.ackedBytes] {
                publishers[index].acked = publishers[index].acked ?? RunningTotal()
                publishers[index].acked?.observe(acked)
            }
            if let acks = sample.figures[StatsFigure.acksReceived] {
                publishers[index].acks = publishers[index].acks ?? RunningTotal()
                publishers[index].acks?.observe(acks)
            }
        }
        for figure in DeclaredFigures.measured {
            if let value = sample.figures[figure.name] { latencies[figure.name, default: []].append(value) }
        }
        // Only a stage that counts a stream's bytes has a line: an alarms stage's loudness is not "0.00 MB".
        guard let stream = sample.stream, sample.figures[figure: DeclaredFigures.bytes] != nil || sample.figures[StatsFigure.bitrate] != nil
        else { return }
        let key = "\(sample.stage) \(stream)"
        if streams[key] == nil { order.append(key) }
        var entry = streams[key, default: Stream()]
        let before = entry.bytes.total
        if let bytes = sample.figures[figure: DeclaredFigures.bytes] { entry.bytes.observe(bytes) }
        if let bitrate = sample.figures[StatsFigure.bitrate], bitrate > 0, entry.bytes.total > before {
            entry.carried.append((entry.bytes.total - before, bitrate))
        }
        streams[key] = entry
    }

    func lines() -> [String] {
        guard let first, let last else { return [] }
        var ongoing = buffering
        if let bufferingSince { ongoing += last.timeIntervalSince(bufferingSince) }
        // One count of reconnects: the publishers' own where there are publishers (a connection
        // that failed and never came back was not reconnected), else the times reading went to reconnecting.
        let reconnectCount = reconnects.isEmpty ? reconnectStates : Int(reconnects.values.reduce(0, +))
        var head = String(format: "summary: %.1f s, buffering %.1f s, reconnects %d", last.timeIntervalSince(first), ongoing, reconnectCount)
        if let silences { head += ", silences \(silences)" }
        var lines = [head]
        for key in order {
            guard let stream = streams[key] else { continue }
            var line = "  \(key): \(Self.megabytes(stream.bytes.total))"
            let rates = stream.carried.map(\.kbps)
            if let low = rates.min(), let high = rates.max() {
                // All the bytes over all the media they carried: intervals weigh by their media.
                let media = stream.carried.reduce(0) { $0 + $1.bytes / $1.kbps }
                let average = stream.carried.reduce(0) { $0 + $1.bytes } / media
                line += String(format: ", bitrate min/avg/max %.0f/%.0f/%.0f kbit/s", low, average, high)
            }
            lines.append(line)
        }
        // A destination that never sent a byte has its error line; a row of zeros adds nothing.
        for publisher in publishers where publisher.sent.total > 0 {
            // nginx-rtmp acknowledges in 5 MB windows: none yet is not "the server took nothing".
            let acked = publisher.acked.map(\.total).flatMap { $0 > 0 ? ", \(Self.megabytes($0)) acknowledged" : nil }
            let acks = publisher.acks.map { ", \(Int($0.total)) ACKs received" }
            lines.append("  \(publisher.stage): \(Self.megabytes(publisher.sent.total)) sent" + (acked ?? "") + (acks ?? ""))
        }
        for figure in DeclaredFigures.measured {
            let (unit, scale) = figure.meaning == .avOffset ? ("ms", "%+.1f") : ("s", "%.3f")
            let label = figure.label
            guard let values = latencies[figure.name], let low = values.min(), let high = values.max(), let middle = values.median
            else { continue }
            lines.append("  \(label): min/median/max " + [low, middle, high].map { String(format: scale, $0) }.joined(separator: "/") + " \(unit)")
        }
        return lines
    }

    static func megabytes(_ bytes: Double) -> String {
        String(format: "%.2f MB", bytes / 1_000_000)
    }
}
