import ArgumentParser
import CastlineApp
import CastlineKit

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Play a live HLS, RTMP, SRT or WebRTC (WHEP) stream (or VOD HLS) from the live edge, to the speakers, a window, a file, or nowhere (a shortcut for a pipeline file).",
        discussion: """
            Keys, when stdin is a terminal: \(PipelineFiles.keyHelp).
            --print-pipeline prints the pipeline file these flags make.
            """)

    @Argument(help: "The HLS playlist URL (https://stream.mux.com/ID.m3u8), an RTMP or SRT stream (rtmp://HOST/app with --key-env, srt://HOST:PORT), or a WHEP endpoint (https://HOST/…/whep).")
    var url: String
    @OptionGroup var credentials: PlayCredentialOptions
    @Flag(help: "Audio only: video is not decoded, nor downloaded when the playlist has an audio-only rendition.")
    var audioOnly = false
    @Option(help: ArgumentHelp("Also record to this file: .wav (decoded audio), or .mkv/.mp4/.ts keeping the encoded streams as they are.",
                               valueName: "path"))
    var record: String?
    @Flag(help: "Replace the --record file if it exists.")
    var overwrite = false
    @Option(help: ArgumentHelp("audio (sound on the default device), window (the picture in a window too) or null (headless monitoring).",
                               valueName: "audio|window|null"))
    var output = ListenShortcut.Output.audio
    @Option(help: ArgumentHelp("auto, best, lowest, a bitrate (800k) or a name/resolution (720p).", valueName: "rendition"))
    var rendition = "auto"
    @Flag(help: "A stream that is not live yet (HTTP 404) is waited for, retrying every 2 s.")
    var waitForLive = false
    @Option(parsing: .unconditional, help: ArgumentHelp("The stream has ended when its playlist listed no new media for this long (a server that cannot be reached is retried until it is back).", valueName: "duration"))
    var endAfter = Duration.seconds(30)
    @Option(parsing: .unconditional, help: ArgumentHelp("A request the server stops answering for this long has failed, and is retried (default 10s).",
                               valueName: "duration"))
    var timeout: Duration?
    // Unconditional: `--delay -5s` is a bad value to name, not a missing one.
    @Option(parsing: .unconditional, help: ArgumentHelp("Play this far behind live; + and - move it by a second while listening (e.g. 10s).",
                                                        valueName: "duration"))
    var delay: Duration?
    @Option(parsing: .unconditional, help: ArgumentHelp("History kept for the delay: the most it can be (default 10m; with --delay).",
                               valueName: "duration"))
    var maxDelay: Duration?
    @Flag(help: "Read castline's test-signal clock back from what plays: latency behind the broadcaster and A/V offset, each second and in the summary (video is then decoded too, unless --audio-only).")
    var measureLatency = false
    @Option(help: "Pipeline name in events and metrics.")
    var name = "listen"
    @OptionGroup
    var printing: ShortcutOptions
    @OptionGroup(title: "Stats")
    var stats: StatsOptions
    @OptionGroup(title: "Control")
    var control: ControlOptions

    var shortcut: ListenShortcut {
        var made = ListenShortcut(url: url)
        (made.audioOnly, made.record, made.output, made.rendition) = (audioOnly, record, output, rendition)
        (made.waitForLive, made.endAfter, made.delay, made.maxDelay) = (waitForLive, endAfter, delay, maxDelay)
        (made.timeout, made.tokenEnv, made.tokenFile) = (timeout, credentials.tokenEnv, credentials.tokenFile)
        made.overwrite = overwrite
        (made.name, made.stats) = (name, stats.settings)
        made.figuresWatched = Terminal.stderrIsTerminal || control.ui
        (made.measureLatency, made.keyEnv, made.keyFile, made.passphraseEnv) = (measureLatency, credentials.keyEnv, credentials.keyFile, credentials.passphraseEnv)
        return made
    }

    func validate() throws { try checked { () throws(SettingsError) in try shortcut.validate() } }

    func run() async throws {
        let options = RunSession.Options(stopAfter: printing.duration, stats: stats.settings, control: try control.settings, keys: true)
        let status = await RunSession.run(origin: "castline listen", printOnly: printing.printPipeline, options: options,
                                          shortcut.spec)
        if status != 0 { throw ExitCode(status) }
    }
}
