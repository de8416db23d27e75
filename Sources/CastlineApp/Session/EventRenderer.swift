import CastlineKit
import Foundation

/// Prints run events for people, on stderr. The status line is redrawn in
/// place on a terminal; elsewhere it is printed every tenth time, so logs stay readable.
final class EventRenderer {
    let prefix: String
    private let inPlace = Terminal.stderrIsTerminal
    private var statusShown = false
    private var statusCount = 0
    private var lastBuffering: Int?
    /// The in-place line joins the publisher's status and the stats stage's figures.
    private var publisherStatus: String?
    private var statsStatus: StatsStatusLine

    /// `playoutMoved`: a stage plays out on its own clock (a delay), so a source's latency is not what plays.
    /// `statsStages`: the pipeline's stats stages in order (the outermost speaks on the line).
    init(pipeline: String, showName: Bool, playoutMoved: Bool, statsStages: [String]) {
        prefix = showName ? "[\(pipeline)] " : ""
        statsStatus = StatsStatusLine(commands: PipelineFiles.registry.commands, playoutMoved: playoutMoved,
                                      statsStages: statsStages)
    }

    func render(_ event: RunEvent) {
        let statsChanged = statsStatus.update(event)
        if case .status(let line) = event.kind {
            statusCount += 1
            publisherStatus = line
            if inPlace {
                drawStatus()
            } else if statusCount % 10 == 1 {
                Terminal.status("\(prefix)\(line)")
            }
            return
        }
        if case .stats = event.kind {
            // Stats refresh the line on a terminal only; logs have the JSON lines for that.
            if inPlace, statsChanged { drawStatus() }
            return
        }
        if statusShown {
            Terminal.write("\r\u{1B}[K")
            statusShown = false
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
        case .statsChange(let change, let stage, let stream):
            Terminal.status("\(prefix)\(change) on \(stream) (\(stage))")
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

    /// Leaves the in-place line so what follows starts on a clean line.
    func endStatus() {
        if statusShown { Terminal.write("\n") }
        statusShown = false
    }

    /// Redraws the line in place, fitted to the terminal's width (the least important parts
    /// go first), so it never wraps into a new line at each update.
    private func drawStatus() {
        var parts = statsStatus.parts
        // The publisher's own line (state, rate, bytes acknowledged) ranks after the state and position.
        if let publisherStatus { parts.insert(publisherStatus, at: min(2, parts.count)) }
        let width = (Terminal.columns ?? 80) - prefix.count - 1
        Terminal.write("\r\u{1B}[K\(prefix)\(StatsStatusLine.fit(parts, width: width))")
        statusShown = true
    }
}
