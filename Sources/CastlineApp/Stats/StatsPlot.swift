import CastlineKit
import StagePlugins
import Foundation

/// The series `--stats-plot` draws, in seconds from when the run began to play (else from the first event).
struct PlotData {
    struct Point { var time: Double; var value: Double }
    private(set) var start: Date?
    /// Bitrate (kbit/s) per `stage stream` (and `rtmp` for the publish), in the order first seen.
    private(set) var bitrate: [(name: String, points: [Point])] = []
    /// RMS level (dBFS) per `stage audio`.
    private(set) var level: [(name: String, points: [Point])] = []
    /// Seconds behind live: a delay stage's delay and available delay, a source's latency.
    private(set) var behind: [(name: String, points: [Point])] = []
    /// Media an HLS source fetched ahead of what left it (s), per stage.
    private(set) var buffered: [(name: String, points: [Point])] = []
    /// Sound minus picture (ms) as a latency stage read it.
    private(set) var avOffset: [(name: String, points: [Point])] = []
    /// What happened to the run (paused, reconnecting, a swap, an alarm raised or cleared), drawn across every panel.
    private(set) var marks: [(time: Double, label: String)] = []

    /// A run's event: its stats samples are points, its changes of state and swaps are marks.
    mutating func add(_ event: RunEvent) {
        // Time 0 is when it began to play: a sample is drawn at the end of the interval it covers.
        if start == nil, case .stateChanged(_, .playing) = event.kind { start = event.time }
        switch event.kind {
        case .stats(let sample): add(sample, at: event.time)
        case .stateChanged(let from, let to) where Self.marked(from: from, to: to):
            marks.append((seconds(at: event.time), to.rawValue))
        case .reloaded: marks.append((seconds(at: event.time), "swapped"))
        case .stage(let stageEvent):
            if let (kind, raised) = stageEvent.alarm { marks.append((seconds(at: event.time), (raised ? "⚠ " : "✓ ") + kind)) }
        default: break
        }
    }

    /// Changes a viewer of the plot wants to see: a pause, a reconnect, and the play that ends them.
    private static func marked(from: RunState, to: RunState) -> Bool {
        switch to {
        case .paused, .reconnecting: true
        case .playing: from == .paused || from == .reconnecting
        default: false
        }
    }

    private mutating func seconds(at time: Date) -> Double {
        if start == nil { start = time }
        return time.timeIntervalSince(start ?? time)
    }

    /// Only the points and marks at or after `time` (seconds from the start).
    func since(_ time: Double) -> PlotData {
        var data = self
        for keyPath in [\PlotData.bitrate, \PlotData.level, \PlotData.behind, \PlotData.buffered, \PlotData.avOffset] {
            data[keyPath: keyPath] = data[keyPath: keyPath].compactMap { entry in
                let points = entry.points.filter { $0.time >= time }
                return points.isEmpty ? nil : (entry.name, points)
            }
        }
        data.marks = marks.filter { $0.time >= time }
        return data
    }

    mutating func add(_ sample: StatsSample, at time: Date) {
        // Pipeline-wide samples of a stats stage carry no bitrate; the publisher's does.
        let name = sample.stream.map { "\(sample.stage) \($0)" } ?? sample.stage
        let seconds = seconds(at: time)
        if let value = sample.figures[StatsFigure.bitrate] {
            Self.append(Point(time: seconds, value: value), to: name, in: &bitrate)
        }
        if let value = sample.figures[figure: DeclaredFigures.level] {
            Self.append(Point(time: seconds, value: value), to: name, in: &level)
        }
        if let value = sample.figures[StatsFigure.hlsBuffered] {
            Self.append(Point(time: seconds, value: value), to: name, in: &buffered)
        }
        if let value = sample.figures[figure: DeclaredFigures.avOffset] {
            Self.append(Point(time: seconds, value: value), to: name, in: &avOffset)
        }
        for figure in DeclaredFigures.behindLive {
            if let value = sample.figures[figure.name] {
                Self.append(Point(time: seconds, value: value), to: "\(sample.stage) \(figure.label)", in: &behind)
            }
        }
    }

    private static func append(_ point: Point, to name: String, in series: inout [(name: String, points: [Point])]) {
        if let index = series.firstIndex(where: { $0.name == name }) {
            series[index].points.append(point)
        } else {
            series.append((name, [point]))
        }
    }
}

/// A hand-written SVG of a run: bitrate above, audio level below, then what the run
/// reported of seconds behind live (a delay, a source's latency), an HLS source's buffer
/// and the test signal's A/V offset, on one time axis, each panel with ticks, units and a
/// legend; pauses, reconnects and swaps marked across them all. The end-of-run plot and the
/// control page's are this one picture.
enum StatsPlot {
    static let width = 960.0
    static let left = 80.0, right = 200.0
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]

    /// `last`: only that many seconds up to the latest point (the live page's view).
    static func svg(_ whole: PlotData, title: String, last window: Double? = nil) -> String {
        let everyPoint = (whole.bitrate + whole.level + whole.behind + whole.buffered + whole.avOffset).flatMap(\.points).map(\.time) + whole.marks.map(\.time)
        let duration = max(everyPoint.max() ?? 0, 1)
        let first = window.map { max(0, duration - $0) } ?? 0
        let data = whole.since(first)
        let time = Axis(low: first, high: max(duration, first + 1))
        let rates = data.bitrate.flatMap(\.points).map(\.value)
        let bitrateHigh = max(rates.max() ?? 0, 1) * 1.1
        // Raw video next to compressed audio spans 1000×: then a log scale keeps both readable.
        let lowestRate = rates.filter { $0 > 0 }.min() ?? 1
        let bitrateAxis = bitrateHigh / lowestRate > 100
            ? Axis(low: pow(10, floor(log10(lowestRate))), high: pow(10, ceil(log10(bitrateHigh))), logarithmic: true)
            : Axis(low: 0, high: bitrateHigh)
        let levelLow = min((data.level.flatMap(\.points).map(\.value).min() ?? -60) - 5, -60)
        // Bitrate and level always; the others when the run reported them.
        var panels = [
            Panel(id: "bitrate", label: "bitrate (kbit/s)", series: data.bitrate, values: bitrateAxis),
            Panel(id: "level", label: "audio RMS (dBFS)", series: data.level, values: Axis(low: levelLow, high: 0)),
        ]
        if !data.behind.isEmpty { panels.append(Panel(id: "behind", label: "behind live (s)", series: data.behind, values: Axis(low: 0, high: highest(data.behind)))) }
        if !data.buffered.isEmpty {
            panels.append(Panel(id: "buffered", label: "buffered ahead (s)", series: data.buffered, values: Axis(low: 0, high: highest(data.buffered))))
        }
        if !data.avOffset.isEmpty {
            let widest = max(data.avOffset.flatMap(\.points).map { abs($0.value) }.max() ?? 0, 10) * 1.1
            panels.append(Panel(id: "av-offset", label: "a/v offset (ms)", series: data.avOffset, values: Axis(low: -widest, high: widest)))
        }
        return svg(panels, title: title, time: time, marks: data.marks)
    }

    /// One panel of a plot: its series against a value axis.
    struct Panel {
        var id: String
        var label: String
        var series: [(name: String, points: [PlotData.Point])]
        var values: Axis
    }

    /// Panels one under the other on one time axis, the marks across them all.
    static func svg(_ panels: [Panel], title: String, subtitle: String? = nil, time: Axis, marks: [(time: Double, label: String)] = []) -> String {
        // Each panel 230 high with 50 below it; the time axis's labels under the last.
        let height = 280 * panels.count + 60
        var svg = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(height)" viewBox="0 0 \(Int(width)) \(height)" \
            font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Int(width / 2))" y="28" text-anchor="middle" font-size="18">\(escape(title))</text>

            """
        if let subtitle { svg += "<text id=\"subtitle\" x=\"\(Int(width / 2))\" y=\"44\" text-anchor=\"middle\">\(escape(subtitle))</text>\n" }
        for (index, entry) in panels.enumerated() {
            svg += panel(id: entry.id, label: entry.label, series: entry.series, top: 50 + 280 * Double(index), height: 230,
                         time: time, values: entry.values, showTime: index == panels.count - 1)
        }
        svg += self.marks(marks, time: time, top: 50, bottom: Double(280 * panels.count))
        svg += "</svg>\n"
        return svg
    }

    /// An axis top a tenth above the highest value (at least 1).
    static func highest(_ series: [(name: String, points: [PlotData.Point])]) -> Double {
        max(series.flatMap(\.points).map(\.value).max() ?? 0, 1) * 1.1
    }

    /// A linear scale with "nice" ticks (1, 2 or 5 × 10ⁿ apart).
    struct Axis {
        var low: Double
        var high: Double
        /// Decades apart; `low` and `high` are then powers of ten.
        var logarithmic = false

        var ticks: [Double] {
            if logarithmic {
                return stride(from: log10(low), through: log10(high), by: 1).map { pow(10, $0.rounded()) }
            }
            let raw = (high - low) / 5
            guard raw > 0, raw.isFinite else { return [low] }
            let magnitude = pow(10, floor(log10(raw)))
            let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
            var tick = (low / step).rounded(.up) * step
            var ticks: [Double] = []
            while tick <= high + step * 1e-9 {
                ticks.append(tick)
                tick += step
            }
            return ticks
        }

        func position(_ value: Double, from start: Double, length: Double) -> Double {
            guard high > low else { return start }
            if logarithmic {
                let clamped = min(max(value, low), high)
                return start + (log10(clamped) - log10(low)) / (log10(high) - log10(low)) * length
            }
            return start + (value - low) / (high - low) * length
        }
    }

    private static func panel(
        id: String, label: String, series: [(name: String, points: [PlotData.Point])],
        top: Double, height: Double, time: Axis, values: Axis, showTime: Bool
    ) -> String {
        let plotWidth = width - left - right
        let bottom = top + height
        func x(_ t: Double) -> Double { time.position(t, from: left, length: plotWidth) }
        func y(_ v: Double) -> Double { bottom - values.position(v, from: 0, length: height) }
        var out = "<g id=\"\(id)\">\n"
        out += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(height)\" fill=\"none\" stroke=\"#444\"/>\n"
        for tick in values.ticks {
            let ty = format(y(tick))
            out += "<line x1=\"\(left)\" x2=\"\(left + plotWidth)\" y1=\"\(ty)\" y2=\"\(ty)\" stroke=\"#ddd\"/>"
            out += "<text x=\"\(left - 6)\" y=\"\(ty)\" text-anchor=\"end\" dominant-baseline=\"middle\">\(tickLabel(tick))</text>\n"
        }
        for tick in time.ticks {
            let tx = format(x(tick))
            out += "<line x1=\"\(tx)\" x2=\"\(tx)\" y1=\"\(bottom)\" y2=\"\(bottom + 5)\" stroke=\"#444\"/>"
            if showTime { out += "<text x=\"\(tx)\" y=\"\(bottom + 18)\" text-anchor=\"middle\">\(tickLabel(tick))</text>" }
            out += "\n"
        }
        if showTime {
            out += "<text x=\"\(left + plotWidth / 2)\" y=\"\(bottom + 38)\" text-anchor=\"middle\">time (s)</text>\n"
        }
        let middle = format(top + height / 2)
        let axisLabel = values.logarithmic ? label + ", log scale" : label
        out += "<text x=\"20\" y=\"\(middle)\" text-anchor=\"middle\" transform=\"rotate(-90 20 \(middle))\">\(escape(axisLabel))</text>\n"
        if series.isEmpty {
            out += "<text x=\"\(left + plotWidth / 2)\" y=\"\(middle)\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n"
        }
        for (index, entry) in series.enumerated() {
            let color = colors[index % colors.count]
            let points = entry.points.map { "\(format(x($0.time))),\(format(y(min(max($0.value, values.low), values.high))))" }
            out += "<polyline class=\"series\" data-series=\"\(id)\" data-name=\"\(escape(entry.name))\" fill=\"none\" "
            out += "stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
            let ly = top + 14 + Double(index) * 18
            let lx = left + plotWidth + 12
            out += "<line x1=\"\(lx)\" x2=\"\(lx + 20)\" y1=\"\(ly)\" y2=\"\(ly)\" stroke=\"\(color)\" stroke-width=\"3\"/>"
            out += "<text x=\"\(lx + 26)\" y=\"\(ly)\" dominant-baseline=\"middle\">\(escape(entry.name))</text>\n"
        }
        out += "</g>\n"
        return out
    }

    /// A dashed line across the panels at each mark, its label at the top.
    private static func marks(_ marks: [(time: Double, label: String)], time: Axis, top: Double, bottom: Double) -> String {
        var out = "<g id=\"marks\">\n"
        for mark in marks {
            let x = format(time.position(mark.time, from: left, length: width - left - right))
            out += "<line class=\"mark\" x1=\"\(x)\" x2=\"\(x)\" y1=\"\(format(top))\" y2=\"\(format(bottom))\" "
            out += "stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
            out += "<text x=\"\(x)\" y=\"\(format(top - 4))\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">\(escape(mark.label))</text>\n"
        }
        return out + "</g>\n"
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func tickLabel(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
