import CastlineKit
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// `castline load`: many simulated viewers of one HLS stream from this process, started at a
/// steady rate, held for a time, each a player's buffer over its own connections (see
/// `HLSViewer`); the running totals once a second on the status line and in `--stats-json`,
/// and at the end.
public enum LoadRun {
    /// Viewers started per second.
    public struct Ramp: Sendable, Equatable, CustomStringConvertible {
        public var perSecond: Double

        public init(perSecond: Double) {
            self.perSecond = perSecond
        }

        /// `50/s`, or a bare `50`.
        public init?(_ text: String) {
            let number = text.hasSuffix("/s") ? String(text.dropLast(2)) : text
            guard let value = Double(number), value > 0, value.isFinite else { return nil }
            perSecond = value
        }

        public var description: String { String(format: "%g/s", perSecond) }
    }

    public struct Settings: Sendable {
        public var url: URL
        public var viewers: Int
        public var ramp: Ramp
        public var duration: Duration
        public var timeout: Duration
        public var statsJSON: String?
        /// `--metrics HOST:PORT`.
        public var metrics: Endpoint?
        /// This process's share of the viewers: shard `index` of `count`.
        public var shard = Shard(index: 0, count: 1)
        /// `--stats-plot FILE`: the SVG report written at the end.
        public var statsPlot: String?
        /// A multivariant playlist's variant, as `listen --rendition` takes it (auto: adapts).
        public var rendition = "auto"
        /// An RTMP or SRT stream to view instead of `url`'s HLS.
        public var stream: StreamViewer.Stream?
        /// `--decode K`: one viewer in K played through the normal pipeline.
        public var decoded: Decoded?

        /// The viewers this process runs (its shard's).
        public var mine: [Int] { shard.viewers(of: viewers) }

        public init(url: URL, viewers: Int, ramp: Ramp, duration: Duration, timeout: Duration, statsJSON: String?) {
            (self.url, self.viewers, self.ramp, self.duration, self.timeout, self.statsJSON) = (url, viewers, ramp, duration, timeout, statsJSON)
        }
    }

    /// Which viewers are decoded, and the listen each plays.
    public struct Decoded: Sendable {
        public var every: Int
        public var listen: ListenShortcut

        public init(every: Int, listen: ListenShortcut) {
            (self.every, self.listen) = (every, listen)
        }

        /// Viewers 1, K+1, 2K+1, … of the whole (so a fleet's shards decode one in K between them).
        func decodes(_ number: Int) -> Bool { (number - 1) % every == 0 }
    }

    /// One process of a fleet: viewers `index + 1`, `index + 1 + count`, … of the whole, each
    /// started when the fleet's ramp would start it, so the shards started together ramp as one.
    public struct Shard: Sendable, Equatable {
        public var index: Int
        public var count: Int

        public init(index: Int, count: Int) {
            (self.index, self.count) = (index, count)
        }

        /// `INDEX/COUNT`; INDEX from `JOB_COMPLETION_INDEX` when that is set (a Kubernetes Indexed
        /// Job's pods share one command line), and may then be left out (`/4`).
        public init?(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let count = Int(parts[1]), count >= 1 else { return nil }
            guard let index = environment["JOB_COMPLETION_INDEX"].flatMap({ Int($0) }) ?? Int(parts[0]), (0..<count).contains(index)
            else { return nil }
            (self.index, self.count) = (index, count)
        }

        /// The viewers of the whole this shard runs, numbered from 1.
        public func viewers(of total: Int) -> [Int] { Array(stride(from: index + 1, to: total + 1, by: count)) }
    }

    /// Sockets a viewer may hold at once: its playlist's and its segments' connections, and a spare.
    static let filesPerViewer = 4

    /// Returns the exit status: 0, or 1 when every viewer failed. SIGINT or SIGTERM ends the
    /// test early, with its totals.
    public static func run(_ settings: Settings) async -> Int32 {
        let mine = settings.mine.count
        if let limit = raiseOpenFileLimit(), UInt64(mine * filesPerViewer) > limit {
            Terminal.status("note: \(mine) viewers may hold \(mine * filesPerViewer) connections, over this process's open-file "
                            + "limit (\(limit)); raise the hard limit (ulimit -Hn) or run fewer viewers per process (--shard)")
        }
        let output: FileHandle?
        do {
            output = try settings.statsJSON.map(StatsOutputs.openJSON)
        } catch {
            Terminal.status("error: \(error)")
            return ExitStatus.badInput
        }
        let metrics = settings.metrics.map { _ in LoadMetrics() }
        var observe: (@Sendable (LoadTally.Observation) -> Void)?
        if let metrics { observe = { metrics.observe($0) } }
        let tally = LoadTally(observe: observe)
        let plot = LoadPlot()
        let timerLag = TimerLag()
        // When the test is over, the metrics server stops too (gracefully: a scrape under way ends).
        var services = [ServiceGroupConfiguration.ServiceConfiguration(
            service: LoadService(settings: settings, tally: tally, output: output, metrics: metrics, plot: plot, timerLag: timerLag),
            successTerminationBehavior: .gracefullyShutdownGroup)]
        if let endpoint = settings.metrics, let metrics {
            services.append(.init(service: MetricsRecorder.server(at: endpoint, registry: metrics.registry)))
        }
        var logger = Logger(label: "castline.load", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        configuration.gracefulShutdownSignals = [.sigint, .sigterm, .sighup]
        let group = ServiceGroup(configuration: configuration)
        do {
            try await group.run()
        } catch {
            Terminal.status("error: \(error)")
            return ExitStatus.failed
        }
        let totals = tally.totals()
        Terminal.status("summary: " + totals.line)
        if let reason = tally.firstErrorWithoutStatus { Terminal.status("note: the first error with no HTTP status: \(reason)") }
        if let worst = timerLag.worst(over: TimerLag.behind) { Terminal.status(TimerLag.note(worst)) }
        if let path = settings.statsPlot {
            let title = "castline load: \(mine) viewers of \(settings.stream?.shown ?? LoadPlot.shown(settings.url))"
            do {
                try Data(plot.svg(title: title, summary: totals.line).utf8).write(to: URL(fileURLWithPath: path))
                Terminal.status("plot: \(path)")
            } catch {
                Terminal.status("--stats-plot: cannot write \(path): \(error.localizedDescription)")
            }
        }
        if totals.started > 0, totals.failed == totals.started {
            Terminal.status("error: every viewer failed: \(tally.firstFailure ?? "no reason given")")
            return ExitStatus.failed
        }
        return 0
    }

    /// Raises the soft limit on open files to the hard one; the limit in force after.
    static func raiseOpenFileLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return UInt64(limit.rlim_cur)
    }
}

/// The load test as a service: viewers started on the ramp's schedule, the totals reported each
/// second, until the ramp and `duration` are over or a stop signal comes.
struct LoadService: Service {
    let settings: LoadRun.Settings
    let tally: LoadTally
    let output: FileHandle?
    let metrics: LoadMetrics?
    let plot: LoadPlot
    let timerLag: TimerLag

    func run() async throws {
        let started = ContinuousClock.now
        let interval = Duration.seconds(1 / settings.ramp.perSecond)
        let end = started + interval * (settings.viewers - 1) + settings.duration
        let viewers = Task { [settings, tally] in
            await withTaskGroup(of: Void.self) { group in
                for number in settings.mine {
                    guard (try? await Task.sleep(until: started + interval * (number - 1), clock: .continuous)) != nil else { break }
                    group.addTask {
                        if let decoded = settings.decoded, decoded.decodes(number) {
                            await DecodedViewer(number: number, listen: decoded.listen, tally: tally).run()
                        } else if let stream = settings.stream {
                            await StreamViewer(number: number, stream: stream, tally: tally, timeout: settings.timeout).run()
                        } else {
                            await HLSViewer(number: number, url: settings.url, rendition: settings.rendition, tally: tally, timeout: settings.timeout).run()
                        }
                    }
                }
            }
        }
        let timer = Task { [timerLag] in await timerLag.measure() }
        await cancelWhenGracefulShutdown {
            var next = started + .seconds(1)
            let planned = settings.mine.count
            while next <= end, (try? await Task.sleep(until: next, clock: .continuous)) != nil {
                let late = timerLag.takeSecond()
                // Said once, as it happens: the figures from here on carry this process's own delay.
                if late > TimerLag.behind, timerLag.firstTimeBehind() { Terminal.status(TimerLag.note(late)) }
                report(tally.totals(), planned: planned, at: (next - started).seconds, timerLag: late)
                next += .seconds(1)
            }
        }
        // What the viewers saw up to here is the test; their winding down is not.
        tally.end()
        timer.cancel()
        viewers.cancel()
        await viewers.value
        Terminal.endStatus()
    }

    /// One reading of the totals: the progress block in place, a JSON line, the metrics, the report's point.
    private func report(_ totals: LoadTotals, planned: Int, at second: Double, timerLag: Double) {
        if Terminal.stderrIsTerminal {
            Terminal.drawStatus(totals.block(planned: planned) + [String(format: "this process  timers up to %.0f ms late", timerLag * 1000)])
        }
        metrics?.record(totals)
        plot.add(totals, at: second)
        guard let output else { return }
        var line: [String: Any] = totals.figures
        line["timer_lag_ms"] = timerLag * 1000
        line["event"] = "load"
        line["ts"] = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
            output.writeDiscardingErrors(data + Data("\n".utf8))
        }
    }
}

/// Whether this process keeps up with its viewers: how late a 100 ms timer fires, the worst of
/// each second and of the whole test. A process that falls behind notes each viewer's fetches
/// late, so its fetch times and stalls carry its own delay, not only the origin's.
final class TimerLag: Sendable {
    private struct State {
        var second = 0.0, worst = 0.0
        var said = false
    }
    private let state = Mutex(State())
    /// Later than this, the figures are said to carry this process's delay.
    static let behind = 0.1

    func measure() async {
        var due = ContinuousClock.now
        while !Task.isCancelled {
            due += .milliseconds(100)
            guard (try? await Task.sleep(until: due, clock: .continuous)) != nil else { return }
            let late = (ContinuousClock.now - due).seconds
            state.withLock { ($0.second, $0.worst) = (max($0.second, late), max($0.worst, late)) }
        }
    }

    /// The worst lateness since the last call.
    func takeSecond() -> Double { state.withLock { state in defer { state.second = 0 }; return state.second } }

    func firstTimeBehind() -> Bool { state.withLock { state in defer { state.said = true }; return !state.said } }

    func worst(over bound: Double) -> Double? { state.withLock { $0.worst > bound ? $0.worst : nil } }

    static func note(_ late: Double) -> String {
        String(format: "note: this process fell behind its viewers (its timers up to %.0f ms late): fetch times and stalls include "
               + "that delay of its own; run fewer viewers per process (--shard)", late * 1000)
    }
}
