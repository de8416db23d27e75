import ArgumentParser
import CastlineApp
import CastlineKit

struct BroadcastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Publish a test signal to RTMP, RTMPS, SRT or WHIP destinations (a shortcut for a pipeline file).",
        discussion: """
            An RTMP stream key comes from --key-env or --key-file, an SRT passphrase from
            --passphrase-env, a WHIP bearer token from --token-env or --token-file, never from an argument.
            Several URLs publish one encode to each: a key source for all, or one per URL in order;
            a destination that fails or goes away never stops the others (the run then exits 1).
            The test signal: a moving pattern with the wall-clock time and frame count burnt in,
            and a tone with a beep on every wall-clock second, a white square flashing on the same frame.
            --print-pipeline prints the pipeline file these flags make.
            """)

    @Argument(help: "Ingest URL(s) without the key: rtmps://global-live.mux.com:443/app, srt://HOST:PORT, srt://:PORT?mode=listener for players to call, or a WHIP endpoint https://HOST/…/whip.")
    var urls: [String] = []
    @OptionGroup
    var keys: IngestKeyOptions
    @Option(help: ArgumentHelp("srt: encrypt with the passphrase in this environment variable (10 to 79 characters).", valueName: "VAR"))
    var passphraseEnv: String?
    @Option(help: ArgumentHelp("Publish over WebRTC to this WHIP endpoint, whatever its path (repeatable).", valueName: "url"))
    var whip: [String] = []
    @Option(help: ArgumentHelp("whip: the bearer token, from this environment variable.", valueName: "VAR"))
    var tokenEnv: String?
    @Option(help: ArgumentHelp("whip: the bearer token, from this file.", valueName: "path"))
    var tokenFile: String?
    @Option(help: ArgumentHelp("rtmps: accept only the server certificate with this SHA-256 fingerprint.", valueName: "sha256"))
    var fingerprint: String?
    @Flag(help: "rtmps: do not validate the server certificate (said on every start).")
    var insecure = false

    // Optional, their defaults said in the help: given with --source, --audio-only or a
    // capture they would be ignored, and the shortcut says so.
    @Option(help: ArgumentHelp("The test signal's video size (default: 1280x720).", valueName: "WxH"))
    var size: String?
    @Option(help: "The test signal's (or --camera's) frames per second (default: 30).")
    var fps: Double?
    @Option(help: ArgumentHelp("Video bitrate, e.g. 2500k or 4M.", valueName: "bitrate"))
    var videoBitrate = Bitrate(bitsPerSecond: 2_500_000)
    @Option(help: ArgumentHelp("Audio bitrate, e.g. 128k.", valueName: "bitrate"))
    var audioBitrate = Bitrate(bitsPerSecond: 128_000)
    @Option(parsing: .unconditional, help: ArgumentHelp("Time between keyframes, e.g. 2s.", valueName: "duration"))
    var keyframeInterval = Duration.seconds(2)
    @Flag(help: "Publish the tone only, no video.")
    var audioOnly = false
    @Option(help: ArgumentHelp("x264 speed preset: ultrafast, superfast, veryfast, faster, fast, medium.", valueName: "preset"))
    var preset = "veryfast"
    @Option(help: ArgumentHelp("cbr (the bitrate on the wire every second, as ingests ask), vbr (up to it) or crf (constant quality).",
                               valueName: "cbr|vbr|crf"))
    var rateControl = RateControl.cbr
    @Option(help: ArgumentHelp("The test signal's tone in Hz, its beep at twice this (default: 1000).", valueName: "Hz"))
    var tone: Double?

    @Option(help: ArgumentHelp("Publish this media file instead of the test signal, looped; re-encoded only if it is not H.264/AAC.",
                               valueName: "path"))
    var source: String?
    @Option(help: ArgumentHelp("Publish sound from this microphone instead of the test signal: default, a PulseAudio source (pactl list short sources) or an ALSA device (arecord -L).",
                               valueName: "device"))
    var microphone: String?
    @Option(help: ArgumentHelp("Publish this V4L2 camera instead of the test pattern, scaled to --size at --fps.", valueName: "device"))
    var camera: String?
    @Option(help: ArgumentHelp("Also record what is published to this file (.mkv, .mp4, .ts; .wav or .mka for the sound alone), from the same encode; a recording cut short still plays (.mkv, .ts).",
                               valueName: "path"))
    var record: String?
    @Flag(help: "Replace the --record file if it exists.")
    var overwrite = false
    @Option(help: "Give up after this many failed reconnects in a row (default: never).")
    var maxReconnects: Int?
    @Option(help: "Pipeline name in events and metrics.")
    var name = "broadcast"
    @OptionGroup
    var printing: ShortcutOptions
    @OptionGroup(title: "Stats")
    var stats: StatsOptions
    @OptionGroup(title: "Control")
    var control: ControlOptions

    var shortcut: BroadcastShortcut {
        var made = BroadcastShortcut(urls: urls)
        keys.apply(to: &made)
        made.passphraseEnv = passphraseEnv
        (made.whipURLs, made.tokenEnv, made.tokenFile) = (whip, tokenEnv, tokenFile)
        (made.fingerprint, made.insecure) = (fingerprint, insecure)
        if let size { made.size = size }
        if let fps { made.fps = fps }
        if let tone { made.tone = tone }
        made.signalFlags = Set([size.map { _ in "--size" }, fps.map { _ in "--fps" }, tone.map { _ in "--tone" }].compactMap { $0 })
        (made.videoBitrate, made.audioBitrate) = (videoBitrate, audioBitrate)
        (made.keyframeInterval, made.audioOnly, made.source) = (keyframeInterval, audioOnly, source)
        (made.microphone, made.camera) = (microphone, camera)
        (made.preset, made.rateControl, made.record) = (preset, rateControl, record)
        made.overwrite = overwrite
        (made.maxReconnects, made.name, made.stats) = (maxReconnects, name, stats.settings)
        return made
    }

    func validate() throws { try checked { () throws(SettingsError) in try shortcut.validate() } }

    func run() async throws {
        let options = RunSession.Options(stopAfter: printing.duration, stats: stats.settings, control: try control.settings)
        let status = await RunSession.run(origin: "castline broadcast", printOnly: printing.printPipeline, options: options,
                                          shortcut.spec)
        if status != 0 { throw ExitCode(status) }
    }
}
