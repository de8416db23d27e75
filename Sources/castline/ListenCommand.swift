import ArgumentParser
import CastlineKit
import Foundation

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Play a live or VOD HLS stream from the live edge, to the speakers, a file, or nowhere (a shortcut for a pipeline file).",
        discussion: """
            Keys, when stdin is a terminal: space pauses and resumes, q quits.
            --print-pipeline prints the pipeline file these flags make.
            """)

    @Argument(help: "The HLS playlist URL, e.g. https://stream.mux.com/ID.m3u8.")
    var url: String

    @Flag(help: "Audio only: video is not decoded, nor downloaded when the playlist has an audio-only rendition.")
    var audioOnly = false

    @Option(help: ArgumentHelp("Also record to this file: .wav (decoded audio), or .mkv/.mp4/.ts keeping the encoded streams as they are.",
                               valueName: "path"))
    var record: String?

    @Option(help: ArgumentHelp("Where sound goes: audio (the default device) or null (headless monitoring).", valueName: "audio|null"))
    var output = "audio"

    @Option(help: ArgumentHelp("auto, best, lowest, a bitrate (800k) or a name/resolution (720p).", valueName: "rendition"))
    var rendition = "auto"

    @Flag(help: "A stream that is not live yet (HTTP 404) is waited for, retrying every 2 s.")
    var waitForLive = false

    @Option(help: ArgumentHelp("The stream has ended when no new media came for this long.", valueName: "duration"))
    var endAfter = "30s"

    @Option(help: ArgumentHelp("Play this far behind live; + and - move it by a second while listening (e.g. 10s).",
                               valueName: "duration"))
    var delay: String?

    @Option(help: ArgumentHelp("History kept for the delay: the most it can be (default 10m; with --delay).",
                               valueName: "duration"))
    var maxDelay: String?

    @Option(help: "Pipeline name in events and metrics.")
    var name = "listen"

    @OptionGroup
    var shortcut: ShortcutOptions

    @OptionGroup(title: "Stats")
    var stats: StatsOptions

    @OptionGroup(title: "Control")
    var control: ControlOptions

    func validate() throws {
        guard ["audio", "null"].contains(output) else { throw ValidationError("--output: use audio or null, not \"\(output)\"") }
        if Duration(configText: endAfter) == nil {
            throw ValidationError("--end-after: \"\(endAfter)\" is not a duration (try 30s)")
        }
        for (flag, value) in [("--delay", delay), ("--max-delay", maxDelay)] {
            guard let value else { continue }
            guard let duration = Duration(configText: value), duration >= .zero else {
                throw ValidationError("\(flag): \"\(value)\" is not a duration of 0 or more (try 10s)")
            }
        }
    }

    var document: [String: Any] {
        // Headless monitoring costs what playing does: every stream is decoded, then dropped.
        var sinks: [[String: Any]] = [output == "null" ? ["null": ["decode": true]] : [output: [String: Any]()]]
        if let record { sinks.append(["file": ["path": record, "sync": true]]) }
        return [
            "version": 1, "name": name,
            "source": ["hls": ["url": url, "rendition": rendition, "wait-for-live": waitForLive, "end-after": endAfter]],
            "stages": (audioOnly ? [["audio-only": [String: Any]()]] : []) + delayStages + stats.stages,
            "sinks": sinks,
        ]
    }

    /// The delay stage, when --delay or --max-delay asks for one.
    var delayStages: [[String: Any]] {
        guard delay != nil || maxDelay != nil else { return [] }
        var options: [String: Any] = [:]
        if let delay { options["initial"] = delay }
        if let maxDelay { options["max"] = maxDelay }
        return [["delay": options]]
    }

    func run() async throws {
        let plan = PipelineFiles.load(document: document, origin: "castline listen").orExit()
        if shortcut.printedPipeline(plan) { return }
        let status = await RunSession.run(plan, options: .init(stopAfter: shortcut.stopAfter, stats: stats, control: control, keys: true))
        if status != 0 { throw ExitCode(status) }
    }
}
