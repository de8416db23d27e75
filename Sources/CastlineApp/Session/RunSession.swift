import CastlineKit
import Foundation
import Synchronization

/// Runs planned pipelines, side by side, to their end: events to stderr, the
/// stats outputs and the control API; Ctrl-C for a clean stop of every one, a
/// second Ctrl-C to stop at once. Returns the exit status: 0 when every
/// pipeline ended well, 1 when any failed.
public enum RunSession {
    /// What a run does besides running; shared by `run`, `listen` and `broadcast`.
    public struct Options {
        public var stopAfter: Duration?
        public var stats: StatsSettings
        public var control: ControlSettings
        /// Keys from the terminal (space, q, and the stages' own), with a single pipeline: `listen`.
        public var keys: Bool
        /// Apply each file again when it changes, and on SIGHUP: `run --watch`.
        public var watch: Bool

        public init(stopAfter: Duration? = nil, stats: StatsSettings = .init(), control: ControlSettings = .init(),
                    keys: Bool = false, watch: Bool = false) {
            self.stopAfter = stopAfter
            self.stats = stats
            self.control = control
            self.keys = keys
            self.watch = watch
        }
    }

    /// One pipeline to run, and the file it came from with its `--set` overrides (for reloads).
    public struct Entry {
        public let plan: PipelinePlan
        public var file: String?
        public var overrides: [String]

        public init(plan: PipelinePlan, file: String? = nil, overrides: [String] = []) {
            self.plan = plan
            self.file = file
            self.overrides = overrides
        }
    }

    public static func run(_ plan: PipelinePlan, options: Options) async -> Int32 {
        await run([Entry(plan: plan)], options: options)
    }

    /// The plans are handed over to their runners (nothing else uses them after).
    public static func run(_ entries: [Entry], options: Options) async -> Int32 {
        let pipelines = entries.map { entry in
            ControlledPipeline(runner: PipelineRunner(plan: entry.plan), file: entry.file, overrides: entry.overrides)
        }
        let names = pipelines.map(\.name)
        let control: ControlServer?
        do {
            control = try await startControl(options.control, pipelines: pipelines)
        } catch {
            Terminal.status("\(error)")
            return ExitStatus.badInput
        }
        let outputs: StatsOutputs
        do {
            outputs = try await StatsOutputs.open(options.stats, pipeline: names.joined(separator: ", "))
        } catch {
            control?.stop()
            Terminal.status("\(error)")
            return ExitStatus.badInput
        }

        // Each runner's events go through its hub (for the control API) and into one stream for
        // the renderers and stats outputs, which are not shared between tasks.
        let (events, allEvents) = AsyncStream.makeStream(of: RunEvent.self)
        let pumping = Task {
            await withTaskGroup(of: Void.self) { group in
                for pipeline in pipelines {
                    group.addTask {
                        for await event in pipeline.runner.events {
                            pipeline.hub.publish(event)
                            control?.record(event)
                            allEvents.yield(event)
                        }
                        pipeline.hub.finish()
                    }
                }
            }
            allEvents.finish()
        }
        // The summary lines come back to be printed only when the run got going.
        let playoutMoved = Dictionary(entries.map { entry in
            (entry.plan.spec.name, entry.plan.stages.contains { $0.component.playsOutOnItsOwnClock })
        }) { first, _ in first }
        let printing = Task { () -> [String] in
            var renderers: [String: EventRenderer] = [:]
            for (name, moved) in playoutMoved { renderers[name] = EventRenderer(pipeline: name, playoutMoved: moved, showName: names.count > 1) }
            for await event in events {
                outputs.consume(event)
                renderers[event.pipeline]?.render(event)
            }
            for name in names { renderers[name]?.endStatus() }
            return outputs.finish()
        }
        // Set before aborting: the runs then end as failed, and the status must still be 130.
        let interrupted = OnceFlag()
        let trap = SignalTrap(
            first: { Task { for pipeline in pipelines { await pipeline.runner.stop() } } },
            second: {
                Terminal.status("stopping at once")
                interrupted.trip()
                Task {
                    for pipeline in pipelines { await pipeline.runner.abort() }
                    exit(130)
                }
            })
        let keyReader = KeyReader()
        if options.keys, pipelines.count == 1, let only = pipelines.first { readKeys(keyReader, for: only.runner) }
        defer { keyReader.stop() }

        // Watching from before the start: an edit made while a pipeline connects counts too.
        let watching = options.watch ? Watching(pipelines) : nil
        let startFailures = await start(pipelines, stopAfter: options.stopAfter)
        if startFailures.count == pipelines.count {
            watching?.stop()
            _ = await printing.value
            for failure in startFailures { Terminal.status(failure.line) }
            control?.stop()
            withExtendedLifetime(pumping) {}
            return startFailures.allSatisfy(\.isBadInput) ? ExitStatus.badInput : ExitStatus.failed
        }
        for failure in startFailures { Terminal.status(failure.line) }

        var failed = !startFailures.isEmpty
        for pipeline in pipelines {
            if case .failed = await pipeline.runner.wait() { failed = true }
        }
        watching?.stop()
        for line in await printing.value { Terminal.status(line) }
        control?.stop()
        withExtendedLifetime(trap) {}
        if interrupted.isTripped { return 130 }
        return failed ? ExitStatus.failed : 0
    }

    /// The control API, when `--control` asks for it; throws a printable line when it cannot start.
    private static func startControl(_ settings: ControlSettings, pipelines: [ControlledPipeline]) async throws -> ControlServer? {
        guard let endpoint = settings.endpoint else { return nil }
        let token = try settings.token?.read()
        do {
            return try await ControlServer.start(host: endpoint.host, port: endpoint.port, token: token, pipelines: pipelines)
        } catch {
            throw StatsOutputError("--control: cannot listen on \(endpoint.host):\(endpoint.port): \(error) (is the port in use?)")
        }
    }

    /// Starts every pipeline at once, each limited to `stopAfter` once started; returns a
    /// line for each that could not start, in order.
    /// A pipeline that did not start: its line, and whether what it was given is at fault (exit 2).
    struct StartFailure {
        var line: String
        var isBadInput: Bool
    }

    private static func start(_ pipelines: [ControlledPipeline], stopAfter: Duration?) async -> [StartFailure] {
        await withTaskGroup(of: (Int, StartFailure?).self) { group in
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

/// `--watch`: each pipeline's file watched, and SIGHUP, applying the file again.
private final class Watching {
    private let watchers: [FileWatcher]
    private let hangup: HangupTrap

    init(_ pipelines: [ControlledPipeline]) {
        watchers = pipelines.compactMap { pipeline in
            pipeline.file.map { FileWatcher(path: $0) { await pipeline.reloadFile() } }
        }
        hangup = HangupTrap {
            Task { for pipeline in pipelines { await pipeline.reloadFile() } }
        }
    }

    func stop() {
        for watcher in watchers { watcher.stop() }
        withExtendedLifetime(hangup) {}
    }
}
