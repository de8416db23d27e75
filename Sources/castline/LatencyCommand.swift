import ArgumentParser
import CastlineApp
import CastlineKit

struct LatencyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Broadcast the test signal and listen back at once: how far behind the broadcaster a viewer plays, and whether sound and picture agree.",
        discussion: """
            Prints, each second, the latency of the sound and of the picture (the wall clock as it plays,
            minus the clock the test signal carries) and the A/V offset (sound minus picture), then a summary.
            Against a real service: castline latency rtmps://global-live.mux.com:443/app --key-env MUX_STREAM_KEY --play https://stream.mux.com/ID.m3u8
            Over WebRTC: castline latency https://HOST/…/whip --play https://HOST/…/whep --token-env TOKEN
            Against a local ingest it starts itself: castline latency --local
            """)

    @Argument(help: "The ingest URL without the key (with --play); omit with --local.")
    var url: String?
    @OptionGroup
    var keys: IngestKeyOptions
    @Option(help: ArgumentHelp("The service's HLS playback URL for this stream.", valueName: "url"))
    var play: String?
    @Flag(help: "Start a local ingest (nginx-rtmp) and measure through it; no other argument.")
    var local = false
    @Option(help: ArgumentHelp("Video size of the test signal.", valueName: "WxH"))
    var size = "640x360"
    @Option(parsing: .unconditional, help: ArgumentHelp("How long to measure.", valueName: "duration"))
    var duration = Duration.seconds(30)
    @Option(help: ArgumentHelp("whip, whep: the bearer token, from this environment variable (for each end that is a WHIP or WHEP endpoint).",
                               valueName: "VAR"))
    var tokenEnv: String?
    @Option(help: ArgumentHelp("whip, whep: the bearer token, from this file.", valueName: "path"))
    var tokenFile: String?

    var broadcast: BroadcastShortcut? {
        guard let url else { return nil }
        var made = BroadcastShortcut(url: url)
        keys.apply(to: &made)
        made.size = size
        if made.publishesOverWHIP { (made.tokenEnv, made.tokenFile) = (tokenEnv, tokenFile) }
        return made
    }

    /// The token for the play end, where it is a WHEP endpoint.
    var playToken: (env: String?, file: String?) {
        guard let play, ListenShortcut(url: play).isWHEP else { return (nil, nil) }
        return (tokenEnv, tokenFile)
    }

    func validate() throws {
        try duration.requireAbove0("--duration", example: "30s")
        try checked { () throws(SettingsError) in try BroadcastShortcut.check(size: size) }
        if tokenEnv != nil, tokenFile != nil { throw ValidationError("give --token-env or --token-file, not both") }
        if tokenEnv != nil || tokenFile != nil, broadcast?.publishesOverWHIP != true, playToken == (nil, nil) {
            throw ValidationError("--token-env and --token-file are for WHIP and WHEP endpoints (an http(s) URL ending in /whip, "
                                  + "a --play URL ending in /whep)")
        }
        if local {
            guard url == nil, play == nil, keys.isEmpty else {
                throw ValidationError("--local starts its own ingest: give no URL, --play or key with it")
            }
            return
        }
        guard url != nil, play != nil else {
            throw ValidationError("give the ingest URL and --play PLAYBACK_URL (or --local for a local ingest)")
        }
        try checked { () throws(SettingsError) in try broadcast?.validate() }
    }

    func run() async throws {
        // Checked in validate().
        let status = await LatencyRun.run(broadcast: broadcast, play: play, playToken: playToken, local: local, size: size,
                                          duration: duration)
        if status != 0 { throw ExitCode(status) }
    }
}
