import CastlineKit
import Foundation
import ServiceLifecycle
import StagePlugins
import Synchronization
import UnixSignals

/// The pipelines of a run, as a Service: waits for the servers to listen, starts
/// every pipeline, renders their events, and ends when they have all ended. On
/// graceful shutdown (the first SIGINT or SIGTERM) each pipeline drains; a second
/// signal stops them at once, exit 130.
final class SessionService: Service, Sendable {
    private let entries: [RunSession.Entry]
    private let pipelines: [ControlledPipeline]
    private let options: RunSession.Options
    // The outputs are used by one task only (the one rendering events).
    private nonisolated(unsafe) let outputs: StatsOutputs
    private let control: ControlServer?
    private let servers: [HTTPServer]
    private let exitStatus = Mutex<Int32>(0)
    /// The line of the first alarm `--fail-on` names, once one was raised.
    private let failedOn = Mutex<String?>(nil)

    init(entries: [RunSession.Entry], pipelines: [ControlledPipeline], options: RunSession.Options,
         outputs: StatsOutputs, control: ControlServer?, servers: [HTTPServer]) {
        self.entries = entries
        self.pipelines = pipelines
        self.options = options
        self.outputs = outputs
        self.control = control
        self.servers = servers
    }

    /// The exit status once `run` has returned.
    var status: Int32 { exitStatus.withLock { $0 } }

    func run() async throws {
        for server in servers { try await server.listening() }
        if options.control.ui, let control {
            let port = try await control.server.listening()
            let host = control.endpoint.host.contains(":") ? "[\(control.endpoint.host)]" : control.endpoint.host
            Terminal.status("control page: http://\(host):\(port)/")
        }
        let pipelines = pipelines
        try await withGracefulShutdownHandler {
            try await runPipelines()
        } onGracefulShutdown: {
            Task { for pipeline in pipelines { await pipeline.runner.stop() } }
        }
    }

    private func runPipelines() async throws {
        let (events, allEvents) = AsyncStream.makeStream(of: RunEvent.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Each runner's events go through its hub (for the control API) and into one stream for
            // the renderers and stats outputs, which are not shared between tasks.
            let webhook = options.webhook.map(AlarmWebhook.init)
            let delivering = webhook.map { webhook in Task { await webhook.run() } }
            group.addTask { [pipelines, control, failOn = options.failOn] in
                await withTaskGroup(of: Void.self) { pumps in
                    for (pipeline, entry) in zip(pipelines, self.entries) {
                        var figureAlarms = Self.figureAlarms(of: entry.plan)
                        pumps.addTask {
                            for await event in pipeline.runner.events {
                                for event in [event] + (figureAlarms?.update(event) ?? []) {
                                    pipeline.hub.publish(event)
                                    control?.record(event)
                                    allEvents.yield(event)
                                    webhook?.offer(event)
                                    if let line = Self.failing(event, on: failOn) { self.stopAll(failedOn: line) }
                                }
                            }
                            pipeline.hub.finish()
                        }
                    }
                }
                allEvents.finish()
            }
            let printing = Task { await self.render(events) }
            group.addTask { try await self.stopAtOnceOnSecondSignal() }
            if options.watch { group.addTask { await self.reloadOnHangup() } }
            let keys = KeyReader()
            if options.keys, pipelines.count == 1, let only = pipelines.first { Self.readKeys(keys, for: only.runner) }
            defer { keys.stop() }
            // Watching from before the start: an edit made while a pipeline connects counts too.
            let watchers = options.watch ? pipelines.compactMap { pipeline in
                pipeline.file.map { FileWatcher(path: $0) { await pipeline.reloadFile() } }
            } : []
            defer { for watcher in watchers { watcher.stop() } }

            let failures = await start()
            let timers = options.stopOnWallClock ? options.stopAfter.map { limit in
                pipelines.map { pipeline in Task { try await Task.sleep(for: limit); await pipeline.runner.stop() } }
            } ?? [] : []
            defer { for timer in timers { timer.cancel() } }
            let together = options.endTogether && failures.isEmpty ? pipelines.map { ended in
                Task {
                    _ = await ended.runner.wait()
                    for pipeline in pipelines { await pipeline.runner.stop() }
                }
            } : []
            defer { for watcher in together { watcher.cancel() } }
            var failed = !failures.isEmpty
            if failures.count < pipelines.count {
                for failure in failures { Terminal.status(failure.line) }
                for pipeline in pipelines {
                    if case .failed = await pipeline.runner.wait() { failed = true }
                }
            }
            // The summary is printed only when the run got going.
            let summary = await printing.value
            if failures.count == pipelines.count {
                for failure in failures { Terminal.status(failure.line) }
                exitStatus.withLock { $0 = failures.allSatisfy(\.isBadInput) ? ExitStatus.badInput : ExitStatus.failed }
            } else {
                for line in summary { Terminal.status(line) }
                if failed { exitStatus.withLock { $0 = ExitStatus.failed } }
            }
            if let line = failedOn.withLock({ $0 }) {
                Terminal.status(line)
                exitStatus.withLock { $0 = ExitStatus.alarm }
            }
            if let webhook, let delivering {
                // What still waits gets 5 s to go out: a webhook that is down does not hold the exit.
                webhook.finish()
                let cap = Task {
                    try await Task.sleep(for: .seconds(5))
                    delivering.cancel()
                    Terminal.status("webhook \(webhook.shown): alarms not delivered at the exit")
                }
                await delivering.value
                cap.cancel()
            }
            group.cancelAll()
        }
    }

    /// Renders events on stderr and feeds the stats outputs; returns the summary lines.
    private func render(_ events: AsyncStream<RunEvent>) async -> [String] {
        var renderers: [String: EventRenderer] = [:]
        // One in-place line per pipeline, in the order of the files (or URLs).
        let lines = StatusLines(count: entries.count)
        for (index, entry) in entries.enumerated() {
            renderers[entry.plan.spec.name] = EventRenderer(
                pipeline: entry.plan.spec.name, showName: entries.count > 1,
                playoutMoved: entry.plan.stages.contains { $0.component.playsOutOnItsOwnClock },
                statsStages: PipelineFiles.measuringStages(of: entry.plan.spec),
                show: { lines.set(index, $0) })
        }
        for await event in events {
            outputs.consume(event)
            renderers[event.pipeline]?.render(event)
        }
        Terminal.endStatus()
        return outputs.finish()
    }

    /// The alarms judged from figures, for a pipeline with an alarms stage (its options, its name).
    static func figureAlarms(of plan: PipelinePlan) -> FigureAlarms? {
        guard let index = plan.spec.stages.firstIndex(where: { $0.kind == AlarmsStage.kind }) else { return nil }
        let spec = plan.spec.stages[index]
        return FigureAlarms(options: spec.options, stage: spec.name ?? "\(spec.kind)\(index)")
    }

    /// The line for an alarm `--fail-on` names; nil for any other event.
    static func failing(_ event: RunEvent, on kinds: Set<AlarmKind>) -> String? {
        guard !kinds.isEmpty, case .stage(let stageEvent) = event.kind, let alarm = stageEvent.alarm, alarm.raised,
              let kind = AlarmKind(rawValue: alarm.kind), kinds.contains(kind) else { return nil }
        return "\(event.pipeline): \(kind) alarm raised (--fail-on \(kind)): stopped"
    }

    /// The first alarm `--fail-on` names stops every pipeline (each drains, so recordings end whole).
    private func stopAll(failedOn line: String) {
        let first = failedOn.withLock { noted -> Bool in
            guard noted == nil else { return false }
            noted = line
            return true
        }
        guard first else { return }
        Task { [pipelines] in for pipeline in pipelines { await pipeline.runner.stop() } }
    }

    /// After the first stop signal (the group's graceful shutdown), a second one stops at once.
    private func stopAtOnceOnSecondSignal() async throws {
        try await gracefulShutdown()
        // Not SIGHUP: a closing terminal may send it twice, and the second must not cut the drain short.
        for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
            Terminal.status("stopping at once")
            for pipeline in pipelines { await pipeline.runner.abort() }
            exit(130)
        }
    }

    /// `--watch`: SIGHUP applies each pipeline's file again.
    private func reloadOnHangup() async {
        for await _ in await UnixSignalsSequence(trapping: .sighup) {
            for pipeline in pipelines { await pipeline.reloadFile() }
        }
    }

    /// A pipeline that did not start: its line, and whether what it was given is at fault (exit 2).
    struct StartFailure {
        var line: String
        var isBadInput: Bool
    }

    /// Starts every pipeline at once, each limited to `stopAfter` once started; returns a
    /// line for each that could not start, in order.
    private func start() async -> [StartFailure] {
        let stopAfter = options.stopOnWallClock ? nil : options.stopAfter
        return await withTaskGroup(of: (Int, StartFailure?).self) { group in
            for (index, pipeline) in pipelines.enumerated() {
                group.addTask {
                    do {
                        try await pipeline.runner.start()
                        if let stopAfter { await pipeline.runner.limit(to: stopAfter) }
                        return (index, nil)
                    } catch {
                        return (index, StartFailure(line: "\(pipeline.name): \(error)",
                                                    isBadInput: (error as? BuildError)?.isBadInput ?? false))
                    }
                }
            }
            var failures: [(Int, StartFailure)] = []
            for await (index, failure) in group {
                if let failure { failures.append((index, failure)) }
            }
            return failures.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Space pauses and resumes, q stops; other keys go to the running stages' commands
    /// (+ and - the delay's). A key a command has but no running stage takes is said once.
    private static func readKeys(_ reader: KeyReader, for runner: PipelineRunner) {
        let commands = PipelineFiles.registry.commands
        let told = OnceFlags<Character>()
        reader.start { key in
            Task {
                switch key {
                case " ":
                    if await runner.state == .paused { await runner.resume() } else { await runner.pause() }
                case "q", "Q":
                    await runner.stop()
                default:
                    guard await runner.perform(key: key) == nil,
                          let command = commands.first(where: { $0.keys[key] != nil }),
                          told.trip(key) else { return }
                    Terminal.status("\(key) moves the \(command.name), and no stage here takes it (\(command.missingHint))")
                }
            }
        }
    }
}

/// The in-place status lines of a run's pipelines, drawn as one block (used by the task that
/// renders events only).
private final class StatusLines {
    private var lines: [String]

    init(count: Int) {
        lines = Array(repeating: "", count: count)
    }

    func set(_ index: Int, _ line: String) {
        guard lines.indices.contains(index), lines[index] != line else { return }
        lines[index] = line
        Terminal.drawStatus(lines.filter { !$0.isEmpty })
    }
}
