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

    init(pipeline: String, showName: Bool) {
        prefix = showName ? "[\(pipeline)] " : ""
    }

    func render(_ event: RunEvent) {
        if case .status(let line) = event.kind {
            statusCount += 1
            if inPlace {
                Terminal.write("\r\u{1B}[K\(prefix)\(line)")
                statusShown = true
            } else if statusCount % 10 == 1 {
                Terminal.status("\(prefix)\(line)")
            }
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
        case .buffering(let percent):
            // Quarter steps, each once.
            let step = percent / 25 * 25
            if step != lastBuffering {
                lastBuffering = step
                Terminal.status("\(prefix)buffering \(step)%")
            }
        case .statsChange(let change, let stage, let stream):
            Terminal.status("\(prefix)\(change) on \(stream) (\(stage))")
        case .status, .stats:
            break
        }
    }
}

/// Runs one planned pipeline to its end: events to stderr, Ctrl-C for a clean
/// stop, a second Ctrl-C to stop at once. Returns the exit status.
enum RunSession {
    static func run(_ plan: PipelinePlan, stopAfter: Duration?, keys: Bool = false) async -> Int32 {
        let runner = PipelineRunner(spec: plan.spec, registry: PipelineFiles.registry)
        let renderer = EventRenderer(pipeline: plan.spec.name, showName: false)
        let printing = Task {
            for await event in runner.events { renderer.render(event) }
        }
        let trap = SignalTrap(
            first: { Task { await runner.stop() } },
            second: {
                Terminal.status("stopping at once")
                Task {
                    await runner.abort()
                    exit(130)
                }
            })
        let keyReader = KeyReader()
        if keys {
            keyReader.start { key in
                Task {
                    switch key {
                    case " ":
                        if await runner.state == .paused { await runner.resume() } else { await runner.pause() }
                    case "q", "Q":
                        await runner.stop()
                    default:
                        break
                    }
                }
            }
        }
        defer { keyReader.stop() }
        do {
            try await runner.start()
        } catch {
            _ = await printing.value
            Terminal.status("\(plan.spec.name): \(error)")
            return ExitStatus.failed
        }
        if let stopAfter { await runner.limit(to: stopAfter) }
        let outcome = await runner.wait()
        _ = await printing.value
        withExtendedLifetime(trap) {}
        if case .failed = outcome { return ExitStatus.failed }
        return 0
    }
}
