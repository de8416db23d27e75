import CastlineKit
import StagePlugins
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs planned pipelines, side by side, to their end, as one ServiceGroup:
/// the pipelines (`SessionService`: events to stderr, stats outputs, keys,
/// `--watch`) and the control and metrics servers. SIGINT, SIGTERM or SIGHUP shuts the
/// group down gracefully (each pipeline drains, then the servers stop); a
/// second one stops at once. Returns the exit status: 0 when every pipeline
/// ended well, 1 when any failed, 2 for bad input, 130 when stopped at once.
public enum RunSession {
    /// What a run does besides running; shared by `run`, `listen` and `broadcast`.
    public struct Options: Sendable {
        public var stopAfter: Duration?
        /// `stopAfter` on the wall clock rather than as media (`monitor`: a stream that stalls is
        /// still watched for just that long).
        public var stopOnWallClock = false
        public var stats: StatsSettings
        public var control: ControlSettings
        /// Keys from the terminal (space, q, and the stages' own), with a single pipeline: `listen`.
        public var keys: Bool
        /// Apply each file again when it changes, and on SIGHUP: `run --watch`.
        public var watch: Bool
        /// Stop every pipeline at the first of these alarms, exit status 3 (`monitor --fail-on`).
        public var failOn: Set<AlarmKind> = []
        /// POST each alarm event here (`monitor --webhook`).
        public var webhook: URL?
        /// The first pipeline to end stops the others (`latency`: past the broadcast's end, the
        /// listener would only measure its own tail).
        public var endTogether = false

        public init(stopAfter: Duration? = nil, stats: StatsSettings = .init(), control: ControlSettings = .init(),
                    keys: Bool = false, watch: Bool = false) {
            self.stopAfter = stopAfter
            self.stats = stats
            self.control = control
            self.keys = keys
            self.watch = watch
        }

        /// What stops the run cleanly: SIGINT, SIGTERM, and SIGHUP (a closed terminal or SSH
        /// session) unless `--watch` takes it for a reload.
        var stopSignals: [UnixSignal] { watch ? [.sigint, .sigterm] : [.sigint, .sigterm, .sighup] }
    }

    /// One pipeline to run, and the file it came from with its `--set` overrides (for reloads).
    public struct Entry: Sendable {
        public let plan: PipelinePlan
        public var file: String?
        public var overrides: [String]

        public init(plan: PipelinePlan, file: String? = nil, overrides: [String] = []) {
            self.plan = plan
            self.file = file
            self.overrides = overrides
        }
    }

    /// `listen` and `broadcast`: the pipeline their flags make, printed (`--print-pipeline`) or run.
    public static func run(origin: String, printOnly: Bool, options: Options, _ build: @escaping PipelineFiles.BuildSpec) async -> Int32 {
        await run(origin: origin, printOnly: printOnly, options: options, [build])
    }

    /// Several pipelines from flags (`monitor`), each checked as a file is: printed as YAML
    /// documents, or run together.
    public static func run(origin: String, printOnly: Bool, options: Options, _ builds: [PipelineFiles.BuildSpec]) async -> Int32 {
        let plans = builds.map { PipelineFiles.load(origin: origin, checkOnly: printOnly, $0).orExit() }
        guard !printOnly else {
            let documents = plans.map { $0.spec.yaml(catalog: PipelineFiles.registry) }
            print(documents.count == 1 ? documents.joined() : documents.map { "---\n" + $0 }.joined(), terminator: "")
            return 0
        }
        return await run(plans.map { Entry(plan: $0) }, options: options)
    }

    public static func run(_ plan: PipelinePlan, options: Options) async -> Int32 {
        await run([Entry(plan: plan)], options: options)
    }

    /// The plans are handed over to their runners (nothing else uses them after).
    public static func run(_ entries: [Entry], options: Options) async -> Int32 {
        let pipelines = entries.map { entry in
            ControlledPipeline(runner: PipelineRunner(plan: entry.plan), spec: entry.plan.spec, file: entry.file, overrides: entry.overrides)
        }
        let control: ControlServer?
        let outputs: StatsOutputs
        do {
            // Two servers cannot share a port; the second would be blamed for "the port in use".
            if let metrics = options.stats.metrics.flatMap(Endpoint.init), let endpoint = options.control.endpoint,
               metrics.port == endpoint.port,
               metrics.host == endpoint.host || [metrics.host, endpoint.host].contains(where: ["0.0.0.0", "::", "[::]"].contains) {
                throw SettingsError("--control and --metrics both ask for port \(metrics.port): give them different ports "
                                    + "(or leave out --metrics: the control API serves /metrics too)")
            }
            control = try options.control.endpoint.map { endpoint in
                ControlServer(endpoint: endpoint, token: try options.control.token?.read(), pipelines: pipelines)
            }
            outputs = try StatsOutputs.open(options.stats, pipeline: pipelines.map(\.name).joined(separator: ", "))
        } catch {
            Terminal.status("\(error)")
            return ExitStatus.badInput
        }
        let servers = [control?.server, outputs.metricsServer].compactMap { $0 }
        let session = SessionService(entries: entries, pipelines: pipelines, options: options, outputs: outputs,
                                     control: control, servers: servers)
        // Shut down in reverse order: the pipelines drain first, then the servers stop.
        let services = servers.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
            + [.init(service: session, successTerminationBehavior: .gracefullyShutdownGroup)]
        var logger = Logger(label: "castline.session", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: options.stopSignals, logger: logger))
        do {
            try await group.run()
        } catch let error as SettingsError {
            Terminal.status("\(error)")
            return ExitStatus.badInput
        } catch {
            Terminal.status("\(error)")
            return ExitStatus.failed
        }
        return session.status
    }

    /// Two files whose pipelines carry the same name: the line that says so.
    public static func sameName(_ entries: [Entry]) -> String? {
        var seen: [String: String] = [:]
        for entry in entries {
            let name = entry.plan.spec.name
            let file = entry.file ?? name
            if let first = seen[name] { return "\(first) and \(file) both name their pipeline \"\(name)\" (give each file its own name:)" }
            seen[name] = file
        }
        return nil
    }
}
