import CastlineKit
import PipelineConfig

/// `castline broadcast`'s flags as the pipeline file they stand for.
public struct BroadcastShortcut: Sendable {
    /// Where to publish, all from one encode: an rtmp sink for each rtmp(s):// URL, an srt sink
    /// for each srt:// URL.
    public var urls: [String]
    /// Where the RTMP stream keys come from: one for every rtmp(s) URL, or one per such URL in order.
    public var keyEnvs: [String] = []
    public var keyFiles: [String] = []
    /// The environment variable holding the SRT destinations' passphrase, if they have one.
    public var passphraseEnv: String?
    public var caFile: String?
    public var fingerprint: String?
    public var insecure = false
    public var size = "1280x720"
    public var fps: Double = 30
    public var videoBitrate = Bitrate(bitsPerSecond: 2_500_000)
    public var audioBitrate = Bitrate(bitsPerSecond: 128_000)
    public var keyframeInterval = Duration.seconds(2)
    public var preset = "veryfast"
    public var rateControl = RateControl.cbr
    /// The test signal's tone, in Hz.
    public var tone: Double = 1000
    public var audioOnly = false
    /// A media file published, looped, instead of the test signal.
    public var source: String?
    /// Capture instead of the test signal: a microphone ("default", a PulseAudio source or an
    /// ALSA device) and/or a V4L2 camera.
    public var microphone: String?
    public var camera: String?
    /// Also written to this file, from the same encode.
    public var record: String?
    public var maxReconnects: Int?
    public var name = "broadcast"
    public var stats = StatsSettings()

    public init(urls: [String]) {
        self.urls = urls
    }

    public init(url: String) {
        self.init(urls: [url])
    }

    public func validate() throws(SettingsError) {
        guard !urls.isEmpty else { throw SettingsError("give the ingest URL to publish to (one or more)") }
        let rtmpCount = urls.filter { Self.protocolOf($0) == "rtmp" }.count
        let keys = max(keyEnvs.count, keyFiles.count)
        if rtmpCount > 0, keys == 0 {
            throw SettingsError("give the stream key with --key-env VAR or --key-file PATH (never as an argument)")
        }
        if rtmpCount == 0, keys > 0 || caFile != nil || fingerprint != nil || insecure {
            throw SettingsError("--key-env, --key-file, --ca-file, --fingerprint and --insecure are for rtmp(s):// URLs; SRT takes --passphrase-env")
        }
        if !keyEnvs.isEmpty, !keyFiles.isEmpty { throw SettingsError("give --key-env or --key-file, not both") }
        guard keys == 0 || keys == 1 || keys == rtmpCount else {
            throw SettingsError("\(keys) keys for \(rtmpCount) RTMP URLs: give one --key-env (or --key-file) for all, or one per RTMP URL in order")
        }
        if passphraseEnv != nil, rtmpCount == urls.count {
            throw SettingsError("--passphrase-env is for srt:// URLs; an RTMP ingest takes its key with --key-env")
        }
        guard parsedSize != nil else { throw SettingsError("--size: \"\(size)\" is not WIDTHxHEIGHT (try 1280x720)") }
        // Checked here, as flags, so a bad one is named as the flag the user typed (not a key of the file it stands for).
        for (flag, bitrate, example) in [("--video-bitrate", videoBitrate, "2500k"), ("--audio-bitrate", audioBitrate, "128k")]
        where bitrate.bitsPerSecond <= 0 {
            throw SettingsError("\(flag): \(bitrate) is not a bitrate above 0 (try \(example))")
        }
        guard keyframeInterval > .zero else {
            throw SettingsError("--keyframe-interval: \(keyframeInterval.configText) is not a duration over 0 (try 2s)")
        }
        if let maxReconnects, maxReconnects < 0 { throw SettingsError("--max-reconnects must be 0 or more") }
        if source != nil, audioOnly { throw SettingsError("--audio-only goes with the test signal, not with --source") }
        if isCapturing, source != nil { throw SettingsError("give --source FILE or --microphone/--camera, not both") }
        if camera != nil, audioOnly { throw SettingsError("--audio-only publishes no video: leave out --camera") }
        guard (20...10_000).contains(tone) else { throw SettingsError("--tone: \(tone) Hz is out of 20 to 10000") }
    }

    private var isCapturing: Bool { microphone != nil || camera != nil }

    /// The capture source's options for --microphone and --camera.
    private func capture(width: Int, height: Int) -> [String: Any] {
        var options: [String: Any] = [:]
        if let microphone { options["audio"] = microphone == "default" ? [String: Any]() : ["device": microphone] }
        if let camera { options["video"] = ["device": camera, "width": width, "height": height, "fps": fps] }
        return options
    }

    /// The sink a URL publishes with: "srt" for srt://, else "rtmp" (whose URL check names
    /// the schemes it takes).
    static func protocolOf(_ url: String) -> String {
        uriScheme(url) == "srt" ? "srt" : "rtmp"
    }

    private var parsedSize: (Int, Int)? {
        let parts = size.lowercased().split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    public var document: [String: Any] {
        let (width, height) = parsedSize ?? (1280, 720)
        var test: [String: Any] = ["audio": ["tone": tone]]
        var encode: [String: Any] = ["audio": ["codec": "aac", "bitrate": audioBitrate.description]]
        let video: [String: Any] = ["codec": "h264", "bitrate": videoBitrate.description, "keyframe-interval": keyframeInterval.configText,
                                    "preset": preset, "rate-control": rateControl.rawValue]
        if source != nil {
            encode["when"] = "needed"
            encode["video"] = video
        } else if isCapturing {
            if camera != nil { encode["video"] = video }
            if microphone == nil { encode["audio"] = nil }
        } else if !audioOnly {
            test["video"] = ["width": width, "height": height, "fps": fps]
            encode["video"] = video
        }
        var rtmpIndex = 0
        let destinations = urls.map { url -> [String: Any] in
            guard Self.protocolOf(url) == "rtmp" else {
                var srt: [String: Any] = ["url": url]
                if let passphraseEnv { srt["passphrase"] = "${\(passphraseEnv)}" }
                if let maxReconnects { srt["max-reconnects"] = maxReconnects }
                return ["srt": srt]
            }
            defer { rtmpIndex += 1 }
            var rtmp: [String: Any] = ["url": url]
            if !keyEnvs.isEmpty { rtmp["key"] = "${\(keyEnvs[keyEnvs.count == 1 ? 0 : rtmpIndex])}" }
            if !keyFiles.isEmpty { rtmp["key-file"] = keyFiles[keyFiles.count == 1 ? 0 : rtmpIndex] }
            // TLS options are for the rtmps:// destinations among several; with none, the sink says they apply to rtmps only.
            if url.lowercased().hasPrefix("rtmps://") || !urls.contains(where: { $0.lowercased().hasPrefix("rtmps://") }) {
                if let caFile { rtmp["ca-file"] = caFile }
                if let fingerprint { rtmp["fingerprint"] = fingerprint }
                if insecure { rtmp["insecure"] = true }
            }
            if let maxReconnects { rtmp["max-reconnects"] = maxReconnects }
            return ["rtmp": rtmp]
        }
        let origin: [String: Any] = source.map { ["file": ["path": $0, "loop": true]] }
            ?? (isCapturing ? ["capture": capture(width: width, height: height)] : ["test": test])
        return [
            "version": 1, "name": name,
            "source": origin,
            "stages": [["encode": encode]] + stats.stages,
            "sinks": destinations + (record.map { [["file": $0]] } ?? []),
        ]
    }
}
