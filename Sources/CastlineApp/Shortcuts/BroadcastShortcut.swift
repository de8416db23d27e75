import Foundation
import CastlineKit
import StagePlugins
import PipelineConfig

/// `castline broadcast`'s flags as the pipeline file they stand for.
public struct BroadcastShortcut: Sendable {
    /// Where to publish, all from one encode: an rtmp sink for each rtmp(s):// URL, an srt sink
    /// for each srt:// URL, a whip sink for each http(s) URL whose path ends in /whip.
    public var urls: [String]
    /// WHIP endpoints named otherwise (`--whip URL`).
    public var whipURLs: [String] = []
    /// Where the WHIP endpoints' bearer token comes from, if they take one.
    public var tokenEnv: String?
    public var tokenFile: String?
    /// Where the RTMP stream keys come from: one for every rtmp(s) URL, or one per such URL in order.
    public var keyEnvs: [String] = []
    public var keyFiles: [String] = []
    /// The environment variable holding the SRT destinations' passphrase, if they have one.
    public var passphraseEnv: String?
    public var caFile: String?
    public var fingerprint: String?
    public var insecure = false
    public var size = "1280x720"
    public var fps = TestSource.Video.fps.defaultValue
    public var videoBitrate = VideoEncoding.bitrate.defaultValue
    public var audioBitrate = AudioEncoding.bitrate.defaultValue
    public var keyframeInterval = VideoEncoding.keyframeInterval.defaultValue
    public var preset = VideoEncoding.preset.defaultValue
    public var rateControl = VideoEncoding.rateControl.defaultValue
    /// The test signal's tone, in Hz.
    public var tone = TestSource.Audio.tone.defaultValue
    public var audioOnly = false
    /// Which of --size, --fps and --tone were given: each shapes only what makes that part of
    /// the signal, and is refused where nothing it shapes is published.
    public var signalFlags: Set<String> = []
    /// A media file published, looped, instead of the test signal.
    public var source: String?
    /// Capture instead of the test signal: a microphone ("default", a PulseAudio source or an
    /// ALSA device) and/or a V4L2 camera.
    public var microphone: String?
    public var camera: String?
    /// Also written to this file, from the same encode.
    public var record: String?
    /// Replace the recording's file when it exists.
    public var overwrite = false
    public var maxReconnects: Int?
    public var name = "broadcast"
    public var stats = StatsSettings()

    public init(urls: [String]) {
        self.urls = urls
    }

    public init(url: String) {
        self.init(urls: [url])
    }

    /// Some destination is a WHIP endpoint (which may take a bearer token).
    public var publishesOverWHIP: Bool { !whipURLs.isEmpty || urls.contains { Self.protocolOf($0) == "whip" } }

    public func validate() throws(SettingsError) {
        guard !urls.isEmpty || !whipURLs.isEmpty else { throw SettingsError("give the ingest URL to publish to (one or more)") }
        for url in urls { try Self.checkIngest(url) }
        try RecordFlags.check(record: record, overwrite: overwrite)
        let rtmpCount = urls.filter { Self.protocolOf($0) == "rtmp" }.count
        if !publishesOverWHIP, tokenEnv != nil || tokenFile != nil {
            throw SettingsError("--token-env and --token-file are for WHIP endpoints (an http(s) URL ending in /whip, or --whip URL)")
        }
        if tokenEnv != nil, tokenFile != nil { throw SettingsError("give --token-env or --token-file, not both") }
        let keys = max(keyEnvs.count, keyFiles.count)
        if rtmpCount > 0, keys == 0 {
            throw SettingsError("give the stream key with --key-env VAR or --key-file PATH (never as an argument)")
        }
        if rtmpCount == 0, keys > 0 || caFile != nil || fingerprint != nil || insecure {
            throw SettingsError("--key-env, --key-file, --ca-file, --fingerprint and --insecure are for rtmp(s):// URLs; SRT takes --passphrase-env, "
                                + "WHIP --token-env")
        }
        if !keyEnvs.isEmpty, !keyFiles.isEmpty { throw SettingsError("give --key-env or --key-file, not both") }
        guard keys == 0 || keys == 1 || keys == rtmpCount else {
            throw SettingsError("\(keys) keys for \(rtmpCount) RTMP URLs: give one --key-env (or --key-file) for all, or one per RTMP URL in order")
        }
        if passphraseEnv != nil, !urls.contains(where: { Self.protocolOf($0) == "srt" }) {
            throw SettingsError("--passphrase-env is for srt:// URLs; an RTMP ingest takes its key with --key-env")
        }
        try Self.check(size: size)
        // Checked here, as flags, so a bad one is named as the flag the user typed (not a key of the file it stands for).
        for (flag, bitrate, example) in [("--video-bitrate", videoBitrate, "2500k"), ("--audio-bitrate", audioBitrate, "128k")]
        where bitrate.bitsPerSecond <= 0 {
            throw SettingsError("\(flag): \(bitrate) is not a bitrate above 0 (try \(example))")
        }
        // 48 kHz stereo, as the broadcast encodes it: what AAC (and Opus) take there.
        guard (8_000...320_000).contains(Int(audioBitrate.bitsPerSecond)) else {
            throw SettingsError("--audio-bitrate: \(audioBitrate) is outside 8k to 320k, what the audio encoders take (try 128k)")
        }
        guard keyframeInterval > .zero else {
            throw SettingsError("--keyframe-interval: \(keyframeInterval.configText) is not a duration over 0 (try 2s)")
        }
        if let maxReconnects, maxReconnects < 0 { throw SettingsError("--max-reconnects must be 0 or more") }
        if source != nil, audioOnly { throw SettingsError("--audio-only goes with the test signal, not with --source") }
        if isCapturing, source != nil { throw SettingsError("give --source FILE or --microphone/--camera, not both") }
        if camera != nil, audioOnly { throw SettingsError("--audio-only publishes no video: leave out --camera") }
        guard (20...10_000).contains(tone) else { throw SettingsError("--tone: \(tone) Hz is out of 20 to 10000") }
        try checkSignalFlags()
    }

    /// `--size` as the test signal can be encoded at: WIDTHxHEIGHT, both sides even.
    public static func check(size: String) throws(SettingsError) {
        guard let (width, height) = parsed(size: size), width > 0, height > 0 else {
            throw SettingsError("--size: \"\(size)\" is not WIDTHxHEIGHT (try 1280x720)")
        }
        // H.264 as ingests take it (4:2:0) halves both sides for colour.
        guard width % 2 == 0, height % 2 == 0 else {
            throw SettingsError("--size: \(size) has an odd side, which H.264 cannot encode (try \((width + 1) / 2 * 2)x\((height + 1) / 2 * 2))")
        }
    }

    /// A flag that shapes nothing published is an error, not ignored.
    private func checkSignalFlags() throws(SettingsError) {
        func refused(_ flags: [String], _ why: String) throws(SettingsError) {
            let given = flags.filter(signalFlags.contains)
            guard !given.isEmpty else { return }
            throw SettingsError("\(given.joined(separator: " and ")): \(why) (leave \(given.count == 1 ? "it" : "them") out)")
        }
        if source != nil {
            try refused(["--size", "--fps", "--tone"], "--source publishes the file's own picture and sound, not the test signal")
        } else if isCapturing {
            try refused(["--tone"], "with --microphone or --camera there is no test tone")
            if camera == nil { try refused(["--size", "--fps"], "--microphone publishes sound only") }
        } else if audioOnly {
            try refused(["--size", "--fps"], "--audio-only publishes no video")
        }
    }

    private var isCapturing: Bool { microphone != nil || camera != nil }

    /// The capture source for --microphone and --camera.
    private func capture(width: Int, height: Int) -> ComponentSpec {
        ComponentSpec(kind: CaptureSource.kind) { options in
            if let microphone {
                var audio = OptionValues()
                if microphone != "default" { audio.set(CaptureSource.Audio.device, microphone) }
                options.set(CaptureSource.audioOptions, audio)
            }
            if let camera {
                var video = OptionValues()
                video.set(CaptureSource.Video.device, camera)
                video.set(CaptureSource.Video.width, width)
                video.set(CaptureSource.Video.height, height)
                video.set(CaptureSource.Video.fps, fps)
                options.set(CaptureSource.videoOptions, video)
            }
        }
    }

    /// An ingest URL a broadcast can publish to; a typo'd flag's value or a WHEP (playback) URL is
    /// said to be what it is, not taken for an RTMP URL without its key. The text is not repeated:
    /// a mistyped `--token xyz` leaves the token itself as an argument.
    static func checkIngest(_ url: String) throws(SettingsError) {
        let scheme = uriScheme(url)
        switch scheme {
        case "rtmp", "rtmps", "srt": return
        case "http", "https":
            switch WebRTCEndpoint(url: url) {
            case .whip: return
            case .whep: throw SettingsError("a WHEP (playback) endpoint was given: `castline listen` plays it; a broadcast publishes to WHIP (…/whip)")
            case nil: break
            }
            throw SettingsError("an http(s) URL is a WHIP endpoint when its path ends in /whip (give any other with --whip URL); "
                                + "RTMP takes rtmp(s)://HOST/APP")
        default:
            // The scheme is shown only when it looks like one (a typo of rtmp), never other text.
            let plausible = url.contains("://") && scheme.count <= 16 && scheme.first?.isLetter == true
                && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) }
            let what = plausible ? "a \(scheme):// URL" : "an argument that is not a URL (a value of a mistyped flag?)"
            throw SettingsError("\(what) was given where the ingest URL goes: give rtmp(s)://HOST/APP, srt://HOST:PORT or "
                                + "http(s)://HOST/…/whip; keys and tokens come from --key-env or --token-env")
        }
    }

    /// The sink a URL publishes with: "srt" for srt://, "whip" for an http(s) URL whose path ends
    /// in /whip, else "rtmp" (whose URL check names the schemes it takes).
    static func protocolOf(_ url: String) -> String {
        let scheme = uriScheme(url)
        if scheme == "srt" { return "srt" }
        if WebRTCEndpoint(url: url) == .whip { return "whip" }
        return "rtmp"
    }

    private static func parsed(size: String) -> (Int, Int)? {
        let parts = size.lowercased().split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 2, let width = parts[0], let height = parts[1] else { return nil }
        return (width, height)
    }

    /// The pipeline these flags stand for, before `PipelineSpec.completed` checks it and fills its defaults.
    /// Keys and the passphrase are read from the environment variables named (see `FlagSecrets`).
    public func spec(environment: [String: String], deferringUnsetSecrets: Bool) throws(ConfigError) -> PipelineSpec {
        let (width, height) = Self.parsed(size: size) ?? (TestSource.Video.width.defaultValue, TestSource.Video.height.defaultValue)
        var testAudio = OptionValues(), testVideo: OptionValues?
        testAudio.set(TestSource.Audio.tone, tone)
        var encodeAudio: OptionValues? = OptionValues(), encodeVideo: OptionValues?
        // WebRTC carries Opus: a broadcast over WHIP alone encodes it at once, not AAC to re-encode.
        let webRTCOnly = record == nil && urls.allSatisfy { Self.protocolOf($0) == "whip" }
        encodeAudio?.set(AudioEncoding.codec, webRTCOnly ? .opus : .aac)
        encodeAudio?.set(AudioEncoding.bitrate, audioBitrate)
        var video = OptionValues()
        video.set(VideoEncoding.codec, .h264)
        video.set(VideoEncoding.bitrate, videoBitrate)
        video.set(VideoEncoding.keyframeInterval, keyframeInterval)
        video.set(VideoEncoding.preset, preset)
        video.set(VideoEncoding.rateControl, rateControl)
        var encodeWhen = EncodeStage.when.defaultValue
        if source != nil {
            encodeWhen = "needed"
            encodeVideo = video
        } else if isCapturing {
            if camera != nil { encodeVideo = video }
            if microphone == nil { encodeAudio = nil }
        } else if !audioOnly {
            var values = OptionValues()
            values.set(TestSource.Video.width, width)
            values.set(TestSource.Video.height, height)
            values.set(TestSource.Video.fps, fps)
            testVideo = values
            // The test picture is mostly still: one x264 thread encodes it with room to spare,
            // and finer than a floor it only looks the same.
            if VideoEncoding.oneThreadKeepsUp(width: width, height: height, fps: fps, preset: preset) {
                video.set(VideoEncoding.threads, 1)
            }
            video.set(VideoEncoding.qpMin, TestSource.encoderQPMin)
            encodeVideo = video
        }
        var secrets = FlagSecrets(environment: environment, deferringUnset: deferringUnsetSecrets)
        var rtmpIndex = 0
        var destinations: [ComponentSpec] = []
        for url in urls + whipURLs where whipURLs.contains(url) || Self.protocolOf(url) == "whip" {
            var options = OptionValues()
            options.set(WHIPSink.url, url)
            if let tokenEnv { options.set(Credentials.token, try secrets.read(tokenEnv, flag: "--token-env")) }
            if let tokenFile { options.set(Credentials.tokenFile, FlagPath.absolute(tokenFile)) }
            if let maxReconnects { options.set(PublishOptions.maxReconnects, maxReconnects) }
            destinations.append(ComponentSpec(kind: WHIPSink.kind, options: options, keyPath: WHIPSink.kind))
        }
        // Every WebRTC peer decodes constrained baseline; RTMP and SRT ingests take it too, so
        // one encode serves them all.
        if !destinations.isEmpty { encodeVideo?.set(VideoEncoding.profile, "constrained-baseline") }
        for url in urls where Self.protocolOf(url) != "whip" {
            var options = OptionValues()
            guard Self.protocolOf(url) == "rtmp" else {
                options.set(SRTSink.url, url)
                if let passphraseEnv { options.set(Credentials.passphrase, try secrets.read(passphraseEnv, flag: "--passphrase-env")) }
                if let maxReconnects { options.set(PublishOptions.maxReconnects, maxReconnects) }
                destinations.append(ComponentSpec(kind: SRTSink.kind, options: options, keyPath: SRTSink.kind))
                continue
            }
            defer { rtmpIndex += 1 }
            options.set(RTMPSink.url, url)
            if !keyEnvs.isEmpty { options.set(Credentials.key, try secrets.read(keyEnvs[keyEnvs.count == 1 ? 0 : rtmpIndex], flag: "--key-env")) }
            if !keyFiles.isEmpty { options.set(Credentials.keyFile, FlagPath.absolute(keyFiles[keyFiles.count == 1 ? 0 : rtmpIndex])) }
            // TLS options are for the rtmps:// destinations among several; with none, the sink says they apply to rtmps only.
            if url.lowercased().hasPrefix("rtmps://") || !urls.contains(where: { $0.lowercased().hasPrefix("rtmps://") }) {
                if let caFile { options.set(RTMPSink.caFile, FlagPath.absolute(caFile)) }
                if let fingerprint { options.set(RTMPSink.fingerprint, fingerprint) }
                if insecure { options.set(RTMPSink.insecure, true) }
            }
            if let maxReconnects { options.set(PublishOptions.maxReconnects, maxReconnects) }
            destinations.append(ComponentSpec(kind: RTMPSink.kind, options: options, keyPath: RTMPSink.kind))
        }
        let origin = source.map { path in
            ComponentSpec(kind: FileSource.kind) { $0.set(FileSource.path, FlagPath.absolute(path)); $0.set(FileSource.loop, true) }
        } ?? (isCapturing ? capture(width: width, height: height) : ComponentSpec(kind: TestSource.kind) { options in
            options.set(TestSource.audioOptions, testAudio)
            options.set(TestSource.videoOptions, testVideo)
        })
        let encode = ComponentSpec(kind: EncodeStage.kind) { options in
            options.set(EncodeStage.audioOptions, encodeAudio)
            options.set(EncodeStage.videoOptions, encodeVideo)
            options.set(EncodeStage.when, encodeWhen)
        }
        let recording = record.map { RecordFlags.sink($0, paced: false, overwrite: overwrite) }
        var spec = PipelineSpec(name: name, source: origin, stages: [encode] + stats.stages,
                                sinks: destinations + (recording.map { [$0] } ?? []))
        spec.neededAtRunTime = secrets.needed
        return spec
    }
}
