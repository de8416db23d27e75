import CastlineKit

/// `castline listen`'s flags as the pipeline file they stand for.
public struct ListenShortcut: Sendable {
    public var url: String
    /// rtmp(s): where the stream key comes from (the environment, or a file).
    public var keyEnv: String?
    public var keyFile: String?
    /// srt: the environment variable holding the passphrase.
    public var passphraseEnv: String?
    public var audioOnly = false
    public var record: String?
    /// Where it plays.
    public enum Output: String, Sendable, CaseIterable {
        /// The default sound device.
        case audio
        /// The picture in a window, the sound on the default device.
        case window
        /// Nowhere: headless monitoring.
        case null
    }
    public var output = Output.audio
    public var rendition = "auto"
    public var waitForLive = false
    public var endAfter = Duration.seconds(30)
    /// HLS: a request with no byte for this long has failed (nil: the source's 10 s).
    public var timeout: Duration?
    public var delay: Duration?
    public var maxDelay: Duration?
    public var name = "listen"
    public var stats = StatsSettings()
    /// A status line on a terminal: a stats stage for it even when no stats output is asked for.
    public var statusLine = false
    /// A latency stage after the delay: what plays is measured against the test signal's clock.
    public var measureLatency = false

    public init(url: String) {
        self.url = url
    }

    /// An RTMP or SRT stream (the ingest's own input, before its HLS packager) rather than HLS.
    var isIngestInput: Bool {
        ["rtmp", "rtmps", "srt"].contains(uriScheme(url))
    }

    public func validate() throws(SettingsError) {
        if isIngestInput {
            if rendition != "auto" { throw SettingsError("--rendition is for HLS; an RTMP or SRT stream has one rendition") }
            if waitForLive { throw SettingsError("--wait-for-live is for HLS; an RTMP or SRT stream is waited for as it connects") }
            if timeout != nil { throw SettingsError("--timeout is for HLS") }
        }
        let scheme = uriScheme(url)
        if keyEnv != nil || keyFile != nil, !scheme.hasPrefix("rtmp") {
            throw SettingsError("--key-env and --key-file are for rtmp:// URLs (an HLS URL carries its own path; SRT takes --passphrase-env)")
        }
        if keyEnv != nil, keyFile != nil { throw SettingsError("give --key-env or --key-file, not both") }
        if passphraseEnv != nil, scheme != "srt" { throw SettingsError("--passphrase-env is for srt:// URLs") }
        if output == .window, audioOnly { throw SettingsError("--output window shows the video: leave out --audio-only") }
        if let timeout, timeout <= .zero {
            throw SettingsError("--timeout: \(timeout.configText) is not a duration above 0 (try 10s)")
        }
    }

    public var document: [String: Any] {
        // Headless monitoring costs what playing does: every stream is decoded, then dropped.
        var sinks: [[String: Any]] = switch output {
        case .null: [["null": ["decode": true]]]
        // A window is for the picture: with no sound device it plays without sound, and says so.
        case .window: [["video": [String: Any]()], ["audio": ["required": false]]]
        case .audio: [["audio": [String: Any]()]]
        }
        if let record { sinks.append(["file": ["path": record, "sync": true]]) }
        return [
            "version": 1, "name": name,
            "source": isIngestInput ? ["uri": ingestInput]
                : ["hls": ["url": url, "rendition": rendition, "wait-for-live": waitForLive, "end-after": endAfter.configText]
                    .merging(timeout.map { ["timeout": $0.configText] } ?? [:]) { $1 }],
            // The latency stage last: the stats stage before it measures the stream as it came
            // (encoded), and the decoding it needs is then the sink's too.
            "stages": (audioOnly ? [["audio-only": [String: Any]()]] : []) + delayStages + statsStages
                + (measureLatency ? [["latency": [String: Any]()]] : []),
            "sinks": sinks,
        ]
    }

    /// The uri source of an RTMP or SRT stream, its key or passphrase read where the user said.
    private var ingestInput: [String: Any] {
        var options: [String: Any] = ["uri": url]
        if let keyEnv { options["key"] = "${\(keyEnv)}" }
        if let keyFile { options["key-file"] = keyFile }
        if let passphraseEnv { options["passphrase"] = "${\(passphraseEnv)}" }
        return options
    }

    /// The stats stage the stats outputs, or the status line, need.
    private var statsStages: [[String: Any]] {
        let asked = stats.stages
        return asked.isEmpty && statusLine ? [["stats": ["every": "1s"]]] : asked
    }

    /// The delay stage, when --delay or --max-delay asks for one.
    private var delayStages: [[String: Any]] {
        guard delay != nil || maxDelay != nil else { return [] }
        var options: [String: Any] = [:]
        if let delay { options["initial"] = delay.configText }
        if let maxDelay { options["max"] = maxDelay.configText }
        return [["delay": options]]
    }
}
