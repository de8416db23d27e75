import CastlineKit
import Foundation

/// Prints run events for people, on stderr. The status line is redrawn in place on a
/// terminal (one line per pipeline, under the lines events print); elsewhere it is printed
/// every tenth time, so logs stay readable.
final class EventRenderer {
    let prefix: String
    private let inPlace = Terminal.stderrIsTerminal
    /// Where the in-place line goes: the session's block of one line per pipeline.
    private let show: (String) -> Void
    private var lastBuffering: Int?
    /// The in-place line joins each publisher's status (by its sink's name, in the order they
    /// first spoke; with the count of lines each said) and the stats stage's figures.
    private var publishers: [(source: String, line: String, count: Int)] = []
    private var statsStatus: StatsStatusLine

    /// `playoutMoved`: a stage plays out on its own clock (a delay), so a source's latency is not what plays.
    /// `statsStages`: the pipeline's stats stages in order (the outermost speaks on the line).
    init(pipeline: String, showName: Bool, playoutMoved: Bool, statsStages: [String], show: @escaping (String) -> Void) {
        prefix = showName ? "[\(pipeline)] " : ""
        self.show = show
        statsStatus = StatsStatusLine(commands: PipelineFiles.registry.commands, playoutMoved: playoutMoved,
                                      statsStages: statsStages)
    }

    func render(_ event: RunEvent) {
        let statsChanged = statsStatus.update(event)
        if case .status(let line, let source) = event.kind {
            let index = publishers.firstIndex { $0.source == source } ?? publishers.endIndex
            if index == publishers.endIndex { publishers.append((source, line, 0)) }
            publishers[index].line = line
            publishers[index].count += 1
            if inPlace {
                drawStatus()
            } else if publishers[index].count % 10 == 1 {
                Terminal.status("\(prefix)\(withTarget([publisherPart(index)]).joined(separator: "  "))")
            }
            return
        }
        if case .stats = event.kind {
            // Stats refresh the line on a terminal only; logs have the JSON lines for that.
            if inPlace, statsChanged { drawStatus() }
            return
        }
        switch event.kind {
        case .stateChanged(_, .failed):
            break  // the failure line that comes with it says more
        case .stateChanged(_, let to):
            Terminal.status("\(prefix)\(to)")
        case .notice(let text):
            Terminal.status("\(prefix)\(text)")
        case .warning(let text):
            Terminal.status("\(prefix)warning: \(text)")
        case .failure(let text):
            Terminal.status("\(prefix)error: \(text)")
        case .endOfStream:
            Terminal.status("\(prefix)end of stream")
        case .streamStarted:
            Terminal.status("\(prefix)stream started")
        case .streamEnded(let reason):
            Terminal.status("\(prefix)stream ended: \(reason)")
        case .renditionChanged(let rendition):
            Terminal.status("\(prefix)rendition: \(rendition)")
        case .buffering(let percent):
            // Quarter steps, each once.
            let step = percent / 25 * 25
            if step != lastBuffering {
                lastBuffering = step
                Terminal.status("\(prefix)buffering \(step)%")
            }
        case .stage(let stageEvent):
            if let line = stageEvent.line { Terminal.status("\(prefix)\(line)") }
        case .reloaded(let changes, let took):
            Terminal.status("\(prefix)reloaded in \(Int((took.seconds * 1000).rounded())) ms: \(changes.joined(separator: ", "))")
        case .reloadFailed(let origin, let errors):
            Terminal.status("\(prefix)\(origin) not applied; the running pipeline is unchanged:")
            for line in errors { Terminal.status("\(prefix)  \(line)") }
        case .status, .stats:
            break
        }
    }

    /// A publisher's line, named by its sink when there are several.
    private func publisherPart(_ index: Int) -> String {
        publishers.count > 1 ? "\(publishers[index].source): \(publishers[index].line)" : publishers[index].line
    }

    /// Publishers' parts with the encoders' target beside them.
    private func withTarget(_ parts: [String]) -> [String] {
        parts + (statsStatus.target.map { [$0] } ?? [])
    }

    /// Redraws the line in place, fitted to the terminal's width (the least important parts
    /// go first), so it never wraps into a new line at each update.
    private func drawStatus() {
        var parts = statsStatus.parts
        // Each publisher's own line (state, rate, bytes acknowledged) ranks after the state and
        // position, the encoders' target beside them.
        if !publishers.isEmpty {
            parts.insert(contentsOf: withTarget(publishers.indices.map(publisherPart)), at: min(2, parts.count))
        }
        let width = (Terminal.columns ?? 80) - prefix.count - 1
        show(prefix + StatsStatusLine.fit(parts, width: width))
    }
}
