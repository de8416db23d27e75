import CastlineKit

/// `castline broadcast`'s flags as the pipeline file they stand for.
public struct BroadcastShortcut: Sendable {
    public var url: String
    public var keyEnv: String?
    public var keyFile: String?
    public var caFile: String?
    public var fingerprint: String?
    public var insecure = false
    public var size = "1280x720"
    public var fps: Double = 30
    public var videoBitrate = "2500k"
    public var audioBitrate = "128k"
    public var keyframeInterval = "2s"
    public var preset = "veryfast"
    public var rateControl = "cbr"
    /// The test signal's tone, in Hz.
    public var tone: Double = 1000
    public var audioOnly = false
    /// A media file published, looped, instead of the test signal.
    public var source: String?
    /// Also written to this file, from the same encode.
    public var record: String?
    public var maxReconnects: Int?
    public var name = "broadcast"
    public var stats = StatsSettings()

    public init(url: String) {
        self.url = url
    }

    public func validate() throws(SettingsError) {
        if keyEnv == nil, keyFile == nil {
            throw SettingsError("give the stream key with --key-env VAR or --key-file PATH (never as an argument)")
        }
        if keyEnv != nil, keyFile != nil { throw SettingsError("give --key-env or --key-file, not both") }
        guard parsedSize != nil else { throw SettingsError("--size: \"\(size)\" is not WIDTHxHEIGHT (try 1280x720)") }
        if let maxReconnects, maxReconnects < 0 { throw SettingsError("--max-reconnects must be 0 or more") }
        if source != nil, audioOnly { throw SettingsError("--audio-only goes with the test signal, not with --source") }
        guard RateControl(rawValue: rateControl) != nil else {
            throw SettingsError("--rate-control: use \(RateControl.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(rateControl)\"")
        }
        guard (20...10_000).contains(tone) else { throw SettingsError("--tone: \(tone) Hz is out of 20 to 10000") }
    }

    private var parsedSize: (Int, Int)? {
        let parts = size.lowercased().split(separator: "x").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    public var document: [String: Any] {
        let (width, height) = parsedSize ?? (1280, 720)
        var test: [String: Any] = ["audio": ["tone": tone]]
        var encode: [String: Any] = ["audio": ["codec": "aac", "bitrate": audioBitrate]]
        let video: [String: Any] = ["codec": "h264", "bitrate": videoBitrate, "keyframe-interval": keyframeInterval,
                                    "preset": preset, "rate-control": rateControl]
        if source != nil {
            encode["when"] = "needed"
            encode["video"] = video
        } else if !audioOnly {
            test["video"] = ["width": width, "height": height, "fps": fps]
            encode["video"] = video
        }
        var rtmp: [String: Any] = ["url": url]
        if let keyEnv { rtmp["key"] = "${\(keyEnv)}" }
        if let keyFile { rtmp["key-file"] = keyFile }
        if let caFile { rtmp["ca-file"] = caFile }
        if let fingerprint { rtmp["fingerprint"] = fingerprint }
        if insecure { rtmp["insecure"] = true }
        if let maxReconnects { rtmp["max-reconnects"] = maxReconnects }
        let origin: [String: Any] = source.map { ["file": ["path": $0, "loop": true]] } ?? ["test": test]
        return [
            "version": 1, "name": name,
            "source": origin,
            "stages": [["encode": encode]] + stats.stages,
            "sinks": [["rtmp": rtmp]] + (record.map { [["file": $0]] } ?? []),
        ]
    }
}
