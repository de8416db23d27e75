import ArgumentParser
import CastlineKit
import Foundation

struct BroadcastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Publish a test signal to an RTMP or RTMPS ingest (a shortcut for a pipeline file).",
        discussion: """
            The stream key comes from --key-env or --key-file, never from an argument.
            The test signal: a moving pattern with the wall-clock time and frame count burnt in,
            and a tone with a beep on every wall-clock second, flashing the picture on the same frame.
            --print-pipeline prints the pipeline file these flags make.
            """)

    @Argument(help: "Ingest URL without the key, e.g. rtmps://global-live.mux.com:443/app.")
    var url: String

    @Option(help: ArgumentHelp("Read the stream key from this environment variable.", valueName: "VAR"))
    var keyEnv: String?

    @Option(help: ArgumentHelp("Read the stream key from this file.", valueName: "path"))
    var keyFile: String?

    @Option(help: ArgumentHelp("rtmps: trust the CAs in this PEM file (e.g. the one `castline ingest` prints).", valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("rtmps: accept only the server certificate with this SHA-256 fingerprint.", valueName: "sha256"))
    var fingerprint: String?

    @Flag(help: "rtmps: do not validate the server certificate (said on every start).")
    var insecure = false

    @Option(help: ArgumentHelp("Video size.", valueName: "WxH"))
    var size = "1280x720"

    @Option(help: "Frames per second.")
    var fps: Double = 30

    @Option(help: ArgumentHelp("Video bitrate, e.g. 2500k or 4M.", valueName: "bitrate"))
    var videoBitrate = "2500k"

    @Option(help: ArgumentHelp("Audio bitrate, e.g. 128k.", valueName: "bitrate"))
    var audioBitrate = "128k"

    @Option(help: ArgumentHelp("Time between keyframes, e.g. 2s.", valueName: "duration"))
    var keyframeInterval = "2s"

    @Flag(help: "Publish the tone only, no video.")
    var audioOnly = false

    @Option(help: ArgumentHelp("Publish this media file instead of the test signal, looped; re-encoded only if it is not H.264/AAC.",
                               valueName: "path"))
    var source: String?

    @Option(help: "Give up after this many failed reconnects in a row (default: never).")
    var maxReconnects: Int?

    @Option(help: "Pipeline name in events and metrics.")
    var name = "broadcast"

    @OptionGroup
    var shortcut: ShortcutOptions

    @OptionGroup(title: "Stats")
    var stats: StatsOptions

    @OptionGroup(title: "Control")
    var control: ControlOptions

    func validate() throws {
        if keyEnv == nil, keyFile == nil {
            throw ValidationError("give the stream key with --key-env VAR or --key-file PATH (never as an argument)")
        }
        if keyEnv != nil, keyFile != nil { throw ValidationError("give --key-env or --key-file, not both") }
        guard parsedSize != nil else { throw ValidationError("--size: \"\(size)\" is not WIDTHxHEIGHT (try 1280x720)") }
        if let maxReconnects, maxReconnects < 0 { throw ValidationError("--max-reconnects must be 0 or more") }
        if source != nil, audioOnly { throw ValidationError("--audio-only goes with the test signal, not with --source") }
    }

    var parsedSize: (Int, Int)? {
        let parts = size.lowercased().split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    /// The pipeline the flags describe, in the shape of a pipeline file.
    var document: [String: Any] {
        let (width, height) = parsedSize ?? (1280, 720)
        var test: [String: Any] = ["audio": ["tone": 1000]]
        var encode: [String: Any] = ["audio": ["codec": "aac", "bitrate": audioBitrate]]
        if source != nil { encode["when"] = "needed" }
        if !audioOnly {
            test["video"] = ["width": width, "height": height, "fps": fps]
            encode["video"] = ["codec": "h264", "bitrate": videoBitrate, "keyframe-interval": keyframeInterval]
        }
        var rtmp: [String: Any] = ["url": url]
        if let keyEnv { rtmp["key"] = "${\(keyEnv)}" }
        if let keyFile { rtmp["key-file"] = keyFile }
        if let caFile { rtmp["ca-file"] = caFile }
        if let fingerprint { rtmp["fingerprint"] = fingerprint }
        if insecure { rtmp["insecure"] = true }
        if let maxReconnects { rtmp["max-reconnects"] = maxReconnects }
        let origin: [String: Any] = source.map { ["file": ["path": $0, "loop": true]] } ?? ["test": test]
        if source != nil {
            encode["video"] = ["codec": "h264", "bitrate": videoBitrate, "keyframe-interval": keyframeInterval]
        }
        return [
            "version": 1, "name": name,
            "source": origin,
            "stages": [["encode": encode]] + stats.stages,
            "sinks": [["rtmp": rtmp]],
        ]
    }

    func run() async throws {
        let plan = PipelineFiles.load(document: document, origin: "castline broadcast").orExit()
        if shortcut.printedPipeline(plan) { return }
        let status = await RunSession.run(plan, options: .init(stopAfter: shortcut.stopAfter, stats: stats, control: control))
        if status != 0 { throw ExitCode(status) }
    }
}
