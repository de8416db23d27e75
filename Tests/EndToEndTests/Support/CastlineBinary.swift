import Foundation
import LocalIngest

/// The `castline` binary SwiftPM built next to this test bundle, run as a user would.
enum Castline {
    static let repositoryRoot: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }()

    static let executable: String = {
        if let path = ProcessInfo.processInfo.environment["CASTLINE_BIN"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("castline").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return repositoryRoot + "/.build/debug/castline"
    }()

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs castline to completion; `environment` adds to this process's.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(60)
    ) async throws -> Result {
        let process = try start(arguments, environment: environment)
        guard let status = await process.waitForExit(timeout: timeout) else {
            await process.terminate()
            throw ProbeError(message: "castline \(arguments.joined(separator: " ")) did not end in \(timeout)")
        }
        await process.waitForOutput()
        return Result(status: status, stdout: process.standardOutput, stderr: process.standardError)
    }

    /// Starts castline in the background (for signals and long runs); `environment` adds to this process's.
    static func start(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let process = ChildProcess(executable: executable, arguments: arguments, environment: merged,
                                   workingDirectory: repositoryRoot)
        try process.start()
        return process
    }

    /// Waits until a background castline has said `text` on stderr (`count` times); false when
    /// it ended, or `timeout` passed, first.
    static func waitFor(_ text: String, count: Int = 1, in process: ChildProcess, timeout: Duration) async -> Bool {
        let said = { process.standardError.components(separatedBy: text).count - 1 >= count }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if said() { return true }
            if process.exitStatus != nil { return said() }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Stops a background castline the way a user does (Ctrl-C, or SIGTERM from a
    /// service manager) and returns its exit status; nil when it was still running after `timeout`.
    static func interrupt(_ process: ChildProcess, with signal: Int32 = SIGINT,
                          within timeout: Duration = .seconds(15)) async -> Int32? {
        process.signal(signal)
        let status = await process.waitForExit(timeout: timeout)
        if status == nil { await process.terminate() }
        await process.waitForOutput()
        return status
    }

    /// What a run of castline under `strict` printed as a GLib or GStreamer WARNING or
    /// CRITICAL (`(castline:PID): GStreamer-WARNING **: ...`): none belongs in a normal run.
    static func glibWarnings(in stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.contains("-WARNING **") || $0.contains("-CRITICAL **") }
    }

    /// The environment that turns a GLib CRITICAL into an abort (which a test sees as a crash).
    static let strict = ["G_DEBUG": "fatal-criticals"]

    static func example(_ name: String) -> String {
        repositoryRoot + "/pipelines/" + name
    }
}

/// A fresh folder per test, removed afterwards.
final class Scratch: Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "castline-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ name: String, _ text: String) throws -> String {
        let target = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: target))
        return target
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// What ffprobe says about a media file.
struct ProbedMedia {
    struct Stream {
        let type: String
        let codec: String
        let fields: [String: String]
    }

    let duration: Double
    let streams: [Stream]

    static func probe(_ path: String) async throws -> ProbedMedia {
        let result = try await ChildProcess.run("/usr/bin/ffprobe", [
            "-v", "error", "-show_entries",
            "format=duration:stream=codec_type,codec_name,sample_rate,channels,width,height,pix_fmt,avg_frame_rate,profile",
            "-of", "json", path,
        ])
        guard result.status == 0,
              let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw ProbeError(message: "ffprobe failed on \(path): \(result.stderr)")
        }
        let format = json["format"] as? [String: Any]
        let duration = Double(format?["duration"] as? String ?? "") ?? 0
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { entry in
            Stream(type: entry["codec_type"] as? String ?? "", codec: entry["codec_name"] as? String ?? "",
                   fields: entry.compactMapValues { "\($0)" })
        }
        return ProbedMedia(duration: duration, streams: streams)
    }

    func stream(_ type: String) -> Stream? { streams.first { $0.type == type } }
}

struct ProbeError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
