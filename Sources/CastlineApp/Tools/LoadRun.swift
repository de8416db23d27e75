import CastlineKit
import Foundation
import Logging
import ServiceLifecycle

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

        public init(url: URL, viewers: Int, ramp: Ramp, duration: Duration, timeout: Duration, statsJSON: String?) {
            (self.url, self.viewers, self.ramp, self.duration, self.timeout, self.statsJSON) = (url, viewers, ramp, duration, timeout, statsJSON)
        }
    }

    /// Sockets a viewer may hold at once: its playlist's and its segments' connections, and a spare.
    static let filesPerViewer = 4

    /// Returns the exit status: 0, or 1 when every viewer failed. SIGINT or SIGTERM ends the
    /// test early, with its totals.
    public static func run(_ settings: Settings) async -> Int32 {
        if let limit = raiseOpenFileLimit(), UInt64(settings.viewers * filesPerViewer) > limit {
            Terminal.status("note: \(settings.viewers) viewers may hold \(settings.viewers * filesPerViewer) connections, over this "
                            + "process's open-file limit (\(limit)); raise the hard limit (ulimit -Hn) or run fewer viewers")
        }
        let output: FileHandle?
        do {
            output = try settings.statsJSON.map(openOutput)
        } catch {
            Terminal.status("error: --stats-json: \(error)")
            return ExitStatus.badInput
        }
        let tally = LoadTally()
        var logger = Logger(label: "castline.load", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical
        let group = ServiceGroup(services: [LoadService(settings: settings, tally: tally, output: output)],
                                 gracefulShutdownSignals: [.sigint, .sigterm], logger: logger)
        try? await group.run()
        let totals = tally.totals()
        Terminal.status("summary: " + totals.line)
        if totals.started > 0, totals.failed == totals.started {
            Terminal.status("error: every viewer failed: \(tally.firstFailure ?? "no reason given")")
            return ExitStatus.failed
        }
        return 0
    }

    /// Opens `--stats-json`'s file, or stdout for `-`.
    static func openOutput(_ path: String) throws -> FileHandle {
        if path == "-" { return FileHandle.standardOutput }
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
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

    func run() async throws {
        let started = ContinuousClock.now
        let interval = Duration.seconds(1 / settings.ramp.perSecond)
        let end = started + interval * (settings.viewers - 1) + settings.duration
        let viewers = Task { [settings, tally] in
            await withTaskGroup(of: Void.self) { group in
                for number in 1...settings.viewers {
                    guard (try? await Task.sleep(until: started + interval * (number - 1), clock: .continuous)) != nil else { break }
                    group.addTask { await HLSViewer(number: number, url: settings.url, tally: tally, timeout: settings.timeout).run() }
                }
            }
        }
        await cancelWhenGracefulShutdown {
            var next = started + .seconds(1)
            while next <= end, (try? await Task.sleep(until: next, clock: .continuous)) != nil {
                report(tally.totals())
                next += .seconds(1)
            }
        }
        viewers.cancel()
        await viewers.value
        Terminal.endStatus()
    }

    /// One reading of the totals: the status line in place, and a JSON line.
    private func report(_ totals: LoadTotals) {
        if Terminal.stderrIsTerminal { Terminal.drawStatus([totals.line]) }
        guard let output else { return }
        var line: [String: Any] = totals.figures
        line["event"] = "load"
        line["ts"] = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        if let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) {
            output.write(data + Data("\n".utf8))
        }
    }
}
