import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Many simulated viewers of one HLS, RTMP or SRT stream from this process: how long each waits for the first picture, how often playback stalls, which requests fail.",
        discussion: """
            Each viewer is a player's buffer over its own connections: it starts 3 segments behind a live edge, fetches
            segments as they come (up to 30 s ahead), plays them out at real-time pace and stalls when the buffer runs dry.
            Nothing is decoded, unless --decode K: then viewers 1, K+1, 2K+1, … play through the normal pipeline, as
            `listen --output null` does, and count what their own runs show (first frame when playing starts, a stall
            for each time buffering). Once a second: viewers active/started/failed, time to first frame, stalls and the rebuffer
            ratio, live latency (wall clock minus the EXT-X-PROGRAM-DATE-TIME of what each viewer plays), segment fetch
            times, HTTP errors; on stderr, and as a JSON line with --stats-json.
            An RTMP, SRT or WHEP viewer holds one connection and reads the container's timestamps: it shows its first frame
            once 1 s of media has come (a player's network caching; WHEP 0.5 s), stalls when the media runs out, and reconnects
            after a second when the connection fails, goes quiet for --timeout or ends.
            """)

    @Argument(help: "The HLS playlist URL (a media playlist, or a multivariant one: see --rendition), an RTMP or SRT stream (rtmp://HOST/app with --key-env, srt://HOST:PORT), or a WHEP endpoint (https://HOST/…/whep).")
    var url: String
    @OptionGroup var credentials: PlayCredentialOptions
    @Option(help: ArgumentHelp("How many viewers.", valueName: "N"))
    var viewers: Int
    @Option(help: ArgumentHelp("Viewers started per second (e.g. 50/s).", valueName: "rate"))
    var ramp = LoadRun.Ramp(perSecond: 10)
    @Option(parsing: .unconditional, help: ArgumentHelp("How long every viewer is held once all have started.", valueName: "duration"))
    var duration = Duration.seconds(60)
    @Option(parsing: .unconditional, help: ArgumentHelp("A request the server stops answering for this long has failed, and is retried.", valueName: "duration"))
    var timeout = Duration.seconds(10)
    @Option(help: ArgumentHelp("Write the running totals each second as a JSON line to FILE, or to stdout with -.", valueName: "FILE|-"))
    var statsJSON: String?
    @Option(help: ArgumentHelp("Serve the totals as Prometheus metrics at http://HOST:PORT/metrics (time to first frame and fetch times as histograms).",
                               valueName: "HOST:PORT"))
    var metrics: String?
    @Option(help: ArgumentHelp("Run shard INDEX of COUNT of the viewers (INDEX from JOB_COMPLETION_INDEX when set, as in a Kubernetes Indexed Job).",
                               valueName: "INDEX/COUNT"))
    var shard: LoadRun.Shard?
    @Option(help: ArgumentHelp("A multivariant playlist's variant: auto (the first listed, then what each viewer's measured throughput carries), best, lowest, a bitrate (800k) or a name/resolution (720p).", valueName: "rendition"))
    var rendition = "auto"
    @Option(help: ArgumentHelp("At the end, write an SVG of the test over time to FILE: viewers, stalls, time to first frame, live latency.",
                               valueName: "FILE"))
    var statsPlot: String?
    @Option(help: ArgumentHelp("Decode one viewer in K through the normal pipeline (listen --output null), to check the media itself.",
                               valueName: "K"))
    var decode: Int?

    func validate() throws {
        guard let parsed = URL(string: url), Self.schemes.contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
            throw ValidationError("\(url) is not a URL castline loads: give an HLS playlist's http(s):// URL, a WHEP endpoint's (…/whep), or rtmp://, rtmps:// or srt://")
        }
        guard viewers >= 1 else { throw ValidationError("--viewers: give 1 or more") }
        try duration.requireAbove0("--duration", example: "60s")
        guard timeout > .zero else { throw ValidationError("--timeout: give a time above 0 (e.g. 10s)") }
        if let decode, decode < 1 { throw ValidationError("--decode: give 1 or more (1 decodes every viewer, 10 one in ten)") }
        if let metrics, Endpoint(metrics) == nil { throw ValidationError("--metrics: give HOST:PORT (e.g. 0.0.0.0:9464)") }
        if let shard, shard.count > viewers { throw ValidationError("--shard: \(shard.count) shards for \(viewers) viewers would leave some with none") }
    }

    static let schemes: Set = ["http", "https", "rtmp", "rtmps", "srt"]

    func run() async throws {
        guard let parsed = URL(string: url) else { throw ExitCode(ExitStatus.badInput) }
        let stream: StreamViewer.Stream?
        do {
            let key = try TokenSource(env: credentials.keyEnv, file: credentials.keyFile, flags: ("--key-env", "--key-file"))?.read()
            let passphrase = try TokenSource(env: credentials.passphraseEnv, file: nil, flags: ("--passphrase-env", "--passphrase-file"))?.read()
            let token = try TokenSource(env: credentials.tokenEnv, file: credentials.tokenFile, flags: ("--token-env", "--token-file"))?.read()
            let isHLS = ["http", "https"].contains(parsed.scheme?.lowercased() ?? "") && WebRTCEndpoint(url: url) != .whep
            if isHLS, key != nil || passphrase != nil { throw LoadInputError("--key-env, --key-file and --passphrase-env are for rtmp:// and srt:// URLs") }
            if isHLS, token != nil { throw LoadInputError("--token-env and --token-file are for WHEP endpoints (https://…/whep)") }
            stream = isHLS ? nil : try StreamViewer.Stream(url: url, key: key, passphrase: passphrase, token: token)
        } catch {
            Terminal.status("error: \(error)")
            throw ExitCode(ExitStatus.badInput)
        }
        var settings = LoadRun.Settings(url: parsed, viewers: viewers, ramp: ramp, duration: duration, timeout: timeout, statsJSON: statsJSON)
        settings.metrics = metrics.flatMap(Endpoint.init)
        if let shard { settings.shard = shard }
        settings.statsPlot = statsPlot
        settings.rendition = rendition
        settings.stream = stream
        if let decode {
            var listen = ListenShortcut(url: url)
            (listen.output, listen.name, listen.rendition, listen.timeout) = (.null, "viewer", rendition, timeout)
            // Its live latency from castline's test signal where the stream carries it (the programme time otherwise).
            listen.measureLatency = true
            (listen.keyEnv, listen.keyFile, listen.passphraseEnv) = (credentials.keyEnv, credentials.keyFile, credentials.passphraseEnv)
            (listen.tokenEnv, listen.tokenFile) = (credentials.tokenEnv, credentials.tokenFile)
            settings.decoded = LoadRun.Decoded(every: decode, listen: listen)
        }
        let status = await LoadRun.run(settings)
        if status != 0 { throw ExitCode(status) }
    }
}

extension LoadRun.Ramp: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
    public var defaultValueDescription: String { description }
}

extension LoadRun.Shard: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
