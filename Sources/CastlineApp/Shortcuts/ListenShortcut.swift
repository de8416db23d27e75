import CastlineKit
import Foundation
import StagePlugins

/// `castline listen`'s flags as the pipeline file they stand for.
public struct ListenShortcut: Sendable {
    public var url: String
    /// rtmp(s): where the stream key comes from (the environment, or a file).
    public var keyEnv: String?
    public var keyFile: String?
    /// srt: the environment variable holding the passphrase.
    public var passphraseEnv: String?
    /// whep: where the bearer token comes from (the environment, or a file).
    public var tokenEnv: String?
    public var tokenFile: String?
    public var audioOnly = false
    public var record: String?
    /// Replace the recording's file when it exists.
    public var overwrite = false
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
    /// Someone watches the figures (a status line on a terminal, the `--ui` page): a stats
    /// stage for them even when no stats output is asked for.
    public var figuresWatched = false
    /// A latency stage after the delay: what plays is measured against the test signal's clock.
    public var measureLatency = false
    /// An alarms stage with these options, last (`monitor`): with `--output null` it decodes only
    /// what its checks read, where a plain headless listen decodes everything as playing would.
    public var alarms: OptionValues?

    public init(url: String) {
        self.url = url
    }

    /// An RTMP or SRT stream (the ingest's own input, before its HLS packager) rather than HLS.
    var isIngestInput: Bool {
        ["rtmp", "rtmps", "srt"].contains(uriScheme(url))
    }

    /// A WHEP endpoint: an http(s) URL whose path ends in /whep.
    public var isWHEP: Bool {
        WebRTCEndpoint(url: url) == .whep
    }

    public func validate() throws(SettingsError) {
        if isWHEP, rendition != "auto" { throw SettingsError("--rendition is for HLS; a WHEP stream has one rendition") }
        if !isWHEP, tokenEnv != nil || tokenFile != nil {
            throw SettingsError("--token-env and --token-file are for WHEP endpoints (an http(s) URL whose path ends in /whep)")
        }
        if tokenEnv != nil, tokenFile != nil { throw SettingsError("give --token-env or --token-file, not both") }
        if isIngestInput {
            if rendition != "auto" { throw SettingsError("--rendition is for HLS; an RTMP or SRT stream has one rendition") }
            if waitForLive { throw SettingsError("--wait-for-live is for HLS; an RTMP or SRT stream is waited for as it connects") }
            if timeout != nil { throw SettingsError("--timeout is for HLS") }
        }
        let scheme = uriScheme(url)
        if keyEnv != nil || keyFile != nil, !scheme.hasPrefix("rtmp") {
            throw SettingsError("--key-env and --key-file are for rtmp:// URLs (an HLS URL carries its own path; SRT takes --passphrase-env, WHEP --token-env)")
        }
        if keyEnv != nil, keyFile != nil { throw SettingsError("give --key-env or --key-file, not both") }
        if passphraseEnv != nil, scheme != "srt" { throw SettingsError("--passphrase-env is for srt:// URLs") }
        if output == .window, audioOnly { throw SettingsError("--output window shows the video: leave out --audio-only") }
        try RecordFlags.check(record: record, overwrite: overwrite)
        if let timeout, timeout <= .zero {
            throw SettingsError("--timeout: \(timeout.configText) is not a duration above 0 (try 10s)")
        }
        if endAfter <= .zero { throw SettingsError("--end-after: \(endAfter.configText) is not a duration above 0 (try 30s)") }
    }

    /// The pipeline these flags stand for, before `PipelineSpec.completed` checks it and fills its defaults.
    /// A key or passphrase is read from the environment variable named (see `FlagSecrets`).
    public func spec(environment: [String: String], deferringUnsetSecrets: Bool) throws(ConfigError) -> PipelineSpec {
        // Headless monitoring costs what playing does: every stream is decoded, then dropped.
        var sinks: [ComponentSpec] = switch output {
        case .null: [ComponentSpec(kind: NullSink.kind) { $0.set(NullSink.decode, alarms == nil) }]
        // A window is for the picture: with no sound device it plays without sound, and says so.
        case .window: [ComponentSpec(kind: VideoSink.kind), ComponentSpec(kind: AudioSink.kind) { $0.set(AudioSink.required, false) }]
        case .audio: [ComponentSpec(kind: AudioSink.kind)]
        }
        if let record {
            sinks.append(RecordFlags.sink(record, paced: true, overwrite: overwrite))
        }
        var secrets = FlagSecrets(environment: environment, deferringUnset: deferringUnsetSecrets)
        let source = isWHEP ? try whepInput(&secrets) : isIngestInput
            ? try ingestInput(&secrets)
            : ComponentSpec(kind: HLSSource.kind) { options in
                options.set(HLSSource.url, url)
                options.set(HLSSource.rendition, rendition)
                options.set(HLSSource.waitForLive, waitForLive)
                options.set(HLSSource.endAfter, endAfter)
                if let timeout { options.set(HLSSource.timeout, timeout) }
            }
        // The latency stage last: the stats stage before it measures the stream as it came
        // (encoded), and the decoding it needs is then the sink's too.
        let stages = (audioOnly ? [ComponentSpec(kind: AudioOnlyStage.kind)] : []) + delayStages + statsStages
            + (measureLatency ? [ComponentSpec(kind: LatencyStage.kind)] : [])
            + (alarms.map { [ComponentSpec(kind: AlarmsStage.kind, options: $0, keyPath: AlarmsStage.kind)] } ?? [])
        var spec = PipelineSpec(name: name, source: source, stages: stages, sinks: sinks)
        spec.neededAtRunTime = secrets.needed
        return spec
    }

    /// The uri source of an RTMP or SRT stream, its key or passphrase read where the user said.
    private func ingestInput(_ secrets: inout FlagSecrets) throws(ConfigError) -> ComponentSpec {
        var options = OptionValues()
        options.set(URISource.uri, url)
        if let keyEnv {
            options.set(Credentials.key, try secrets.read(keyEnv, flag: "--key-env"))
        }
        if let keyFile { options.set(Credentials.keyFile, FlagPath.absolute(keyFile)) }
        if let passphraseEnv {
            options.set(Credentials.passphrase, try secrets.read(passphraseEnv, flag: "--passphrase-env"))
        }
        if uriScheme(url) == "srt", endAfter != HLSSource.endAfter.defaultValue { options.set(HLSSource.endAfter, endAfter) }
        return ComponentSpec(kind: URISource.kind, options: options, keyPath: URISource.kind)
    }

    /// The whep source, its token read where the user said.
    private func whepInput(_ secrets: inout FlagSecrets) throws(ConfigError) -> ComponentSpec {
        var options = OptionValues()
        options.set(WHEPSource.url, url)
        if let tokenEnv { options.set(Credentials.token, try secrets.read(tokenEnv, flag: "--token-env")) }
        if let tokenFile { options.set(Credentials.tokenFile, FlagPath.absolute(tokenFile)) }
        options.set(HLSSource.waitForLive, waitForLive)
        options.set(HLSSource.endAfter, endAfter)
        if let timeout { options.set(WHIPSink.timeout, timeout) }
        return ComponentSpec(kind: WHEPSource.kind, options: options, keyPath: WHEPSource.kind)
    }

    /// The stats stage the stats outputs, or the status line, need.
    private var statsStages: [ComponentSpec] {
        let asked = stats.stages
        return asked.isEmpty && figuresWatched ? [ComponentSpec(kind: StatsStage.kind)] : asked
    }

    /// The delay stage, when --delay or --max-delay asks for one.
    private var delayStages: [ComponentSpec] {
        guard delay != nil || maxDelay != nil else { return [] }
        return [ComponentSpec(kind: DelayStage.kind) { options in
            if let delay { options.set(DelayStage.initial, delay) }
            if let maxDelay { options.set(DelayStage.maxHistory, maxDelay) }
        }]
    }
}
