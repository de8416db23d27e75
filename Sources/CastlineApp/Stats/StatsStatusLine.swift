import CastlineKit
import StagePlugins
import Foundation

/// The compact status line stats samples drive: state, position, and per
/// stream bitrate plus level (audio) or frame rate (video), e.g.
/// `playing  12.3 s  audio 128 kbit/s -14 dBFS  video 2480 kbit/s 30 fps`,
/// then each stage command's own words (`delay 12.0 s / 25.0 s available`).
/// With several stats stages the outermost (last) one speaks, and says so.
struct StatsStatusLine {
    /// The commands the stages may take: their figures and how they read.
    let commands: [StageCommand]
    /// A stage plays out on its own clock (a delay): the source's latency is not what plays.
    let playoutMoved: Bool
    /// The pipeline's stats stages, in order: the last is the outermost.
    let statsStages: [String]
    private var state: RunState?
    private var stage: String?
    private var streams: [StreamKind: StatsSample] = [:]
    /// The latest figures stage commands move (`delay_s`, `gain_db`).
    private var commandFigures: [String: Double] = [:]
    /// An HLS source's wall clock minus the programme time of what leaves it (EXT-X-PROGRAM-DATE-TIME).
    private var latency: Double?
    /// How long a live HLS source's next segment has been overdue.
    private var waitingForMedia: Double?
    /// Times the run went `reconnecting` (as the summary counts them).
    private var reconnects = 0
    /// A latency stage's latest reading: seconds behind the test signal's clock, and sound minus picture (ms).
    private var measured: (latency: Double, avOffset: Double?)?
    /// What encode stages aim each stream at (kbit/s), by field (`video_kbps`).
    private var targets: [String: Double] = [:]
    /// Short-term loudness (LUFS), where an alarms stage measures it.
    private var loudness: Double?
    /// The alarms raised now, in the order they were raised.
    private var alarms = AlarmBook()

    init(commands: [StageCommand], playoutMoved: Bool, statsStages: [String] = []) {
        self.commands = commands
        self.playoutMoved = playoutMoved
        self.statsStages = statsStages
    }

    mutating func update(_ event: RunEvent) -> Bool {
        switch event.kind {
        case .stateChanged(_, let to):
            state = to
            if to == .reconnecting { reconnects += 1 }
            return stage != nil
        case .stats(let sample) where sample.stream == nil && sample.figures[StatsFigure.downloadBitrate] != nil:
            latency = sample.figures[StatsFigure.latency]
            let waiting = sample.figures[StatsFigure.waitingForMedia]
            defer { waitingForMedia = waiting }
            return (waiting == nil) != (waitingForMedia == nil) && stage != nil
        case .stats(let sample) where sample.stream == nil
            && (sample.figures[figure: DeclaredFigures.videoLatency] ?? sample.figures[figure: DeclaredFigures.audioLatency]) != nil:
            let figures = sample.figures
            if let latency = figures[figure: DeclaredFigures.videoLatency] ?? figures[figure: DeclaredFigures.audioLatency] {
                measured = (latency, figures[figure: DeclaredFigures.avOffset])
            }
            return stage != nil
        case .stats(let sample) where sample.stream == nil:
            return note(sample.figures)
        case .stats(let sample) where sample.figures[figure: DeclaredFigures.loudness] != nil:
            loudness = sample.figures[figure: DeclaredFigures.loudness]
            return stage != nil
        case .stage(let stageEvent) where stageEvent.alarm != nil:
            alarms.add(stageEvent)
            return stage != nil
        case .stage(let stageEvent) where stageEvent.name == StageEvent.targetBitrateName:
            targets.merge(stageEvent.fields) { $1 }
            return false
        case .stage(let stageEvent):
            // What plays moved (a delay set anew, not a gain): the latency read before no longer holds,
            // and is left out until the latency stage reads it again. A command's first figure is its value.
            let moved = playoutMoved && commands.contains { command in
                guard let figure = command.figures.first, DeclaredFigures.playoutPlace.contains(figure),
                      let value = stageEvent.figures[figure] else { return false }
                return commandFigures[figure] != value
            }
            if moved { measured = nil }
            return note(stageEvent.figures) || (moved && stage != nil)
        case .stats(let sample):
            // The publisher's figures are on its own status line.
            guard let stream = sample.stream else { return false }
            if stage != sample.stage, rank(of: sample.stage) > stage.map(rank(of:)) ?? -2 {
                stage = sample.stage
                streams = [:]
            }
            guard sample.stage == stage else { return false }
            streams[stream] = sample
            return true
        default:
            return false
        }
    }

    /// Where a stats stage sits: later is outermost (-1 when not known).
    private func rank(of stage: String) -> Int { statsStages.firstIndex(of: stage) ?? -1 }

    /// Keeps the command figures among `figures`; true when the line should be redrawn.
    private mutating func note(_ figures: [String: Double]) -> Bool {
        let moved = commands.moved(in: figures)
        commandFigures.merge(moved) { $1 }
        return !moved.isEmpty && stage != nil
    }

    /// The line's parts, most important first.
    var parts: [String] {
        guard let stage else { return [] }
        var parts: [String] = []
        // Playing on what was fetched while the stream brings nothing new is not "playing" as usual.
        if let waitingForMedia, state == .playing {
            parts.append(String(format: "waiting for new media (%.0f s)", waitingForMedia))
        } else if let state {
            parts.append(state.rawValue)
        }
        if !alarms.active.isEmpty {
            parts.append("ALARM " + alarms.active.map { alarm in alarm.stream.map { "\(alarm.kind) (\($0))" } ?? alarm.kind }
                .joined(separator: ", "))
        }
        if let position = streams.values.compactMap(\.playPosition).max() {
            parts.append(String(format: "%.1f s", position))
        }
        parts += commands.compactMap { $0.status(commandFigures) }
        for (stream, sample) in streams.sorted(by: { $0.key < $1.key }) {
            let figures = sample.figures
            var part = "\(stream)"
            if let bitrate = figures[StatsFigure.bitrate] { part += String(format: " %.0f kbit/s", bitrate) }
            if let level = figures[figure: DeclaredFigures.level] { part += String(format: " %.0f dBFS", level) }
            if stream == .audio, let loudness { part += String(format: " %.1f LUFS", loudness) }
            if let fps = figures[figure: DeclaredFigures.frameRate] { part += String(format: " %.0f fps", fps) }
            parts.append(part)
        }
        if streams[.audio] == nil, let loudness { parts.append(String(format: "audio %.1f LUFS", loudness)) }
        if let measured {
            parts.append(String(format: "latency %.2f s", measured.latency)
                + (measured.avOffset.map { String(format: " a/v %+.0f ms", $0) } ?? ""))
        }
        if reconnects > 0 { parts.append("reconnects \(reconnects)") }
        // The playlist's programme-time figure, unless a delay moves what plays or the clock was read.
        // The playlist's programme-time figure counts a delay stage's hold too: true with one.
        if let latency, measured == nil { parts.append(String(format: "latency %.1f s", latency)) }
        if statsStages.count > 1 { parts.append("(\(stage))") }
        return parts
    }

    /// The encoded streams' target, for beside a publisher's measured rate (`target 2628 kbit/s`).
    var target: String? {
        targets.isEmpty ? nil : String(format: "target %.0f kbit/s", targets.values.reduce(0, +))
    }

    var text: String? {
        let parts = parts
        return parts.isEmpty ? nil : parts.joined(separator: "  ")
    }

    /// `parts` joined to fit `width` columns: the least important (last) parts go first; the
    /// last one kept is cut where it overflows, between its figures (a publisher's part is
    /// a line of its own, wider than what is left of a narrow terminal, and the most asked for).
    static func fit(_ parts: [String], width: Int, separator: String = "  ") -> String {
        var kept = parts
        while kept.count > 1, kept.dropLast().joined(separator: separator).count + separator.count >= width { kept.removeLast() }
        let line = kept.joined(separator: separator)
        guard line.count > width else { return line }
        let cut = String(line.prefix(max(0, width)))
        if let last = cut.range(of: separator, options: .backwards),
           cut.distance(from: cut.startIndex, to: last.lowerBound) >= (kept.first?.count ?? 0) {
            return String(cut[..<last.lowerBound])
        }
        return cut
    }
}
