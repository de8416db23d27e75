import CastlineKit

/// What an alarm is about, as its events, `GET /alarms` and Prometheus name it.
public enum AlarmKind: String, Sendable, CaseIterable, Codable {
    case silence, loud, quiet, clipping, black, frozen
    /// Judged from what other parts report (`FigureAlarms`), not from the media.
    case stalled, slowDownload = "slow-download", behindLive = "behind-live", avDrift = "av-drift", bitrate, reconnecting

    /// The stream a media check reads; nil for the checks judged from figures.
    public var stream: StreamKind? {
        switch self {
        case .silence, .loud, .quiet, .clipping: .audio
        case .black, .frozen: .video
        case .stalled, .slowDownload, .behindLive, .avDrift, .bitrate, .reconnecting: nil
        }
    }
}

/// One check's threshold and hold time: a fault raises the alarm once it has lasted `hold`,
/// and clears it once it has been gone `clearAfter`.
public struct AlarmCheck: Sendable, Hashable {
    public var on: Bool
    public var threshold: Double
    public var hold: Double
    public var clearAfter: Double
}

/// An `alarms` stage's options: each check in its own map (`silence: { below: -50, for: 10s }`),
/// with defaults a user can start from (EBU R128's −23 LUFS target; ffmpeg's blackdetect and
/// freezedetect thresholds).
public struct AlarmSettings: Sendable, Hashable {
    static let on = ConfigOption<Bool>("on", default: true, help: "false turns this check off")

    enum Silence {
        static let below = ConfigOption<Double>("below", .double(-150...0), default: -60, help: "RMS level (dBFS) under which sound is silent")
        static let hold = ConfigOption<Duration>("for", default: .seconds(5), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, below, hold)
    }
    enum Loud {
        static let over = ConfigOption<Double>("over", .double(0...60), default: 8, help: "LU over the target (short-term loudness)")
        static let hold = ConfigOption<Duration>("for", default: .seconds(3), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, over, hold)
    }
    enum Quiet {
        static let under = ConfigOption<Double>("under", .double(0...60), default: 12, help: "LU under the target (short-term loudness)")
        static let hold = ConfigOption<Duration>("for", default: .seconds(10), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, under, hold)
    }
    enum Clipping {
        static let over = ConfigOption<Double>("over", .double(-20...6), default: -1, help: "true peak (dBTP) over which sound clips")
        static let schema = OptionSchema(AlarmSettings.on, over)
    }
    enum Black {
        static let level = ConfigOption<Double>("level", .double(0...1), default: 0.10,
                                                help: "luma, as a share of the video range, at or under which a pixel is black")
        static let share = ConfigOption<Double>("share", .double(0...1), default: 0.98, help: "share of black pixels that makes a picture black")
        static let hold = ConfigOption<Duration>("for", default: .seconds(2), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, level, share, hold)
    }
    enum Frozen {
        static let noise = ConfigOption<Double>("noise", .double(-120...0), default: -60,
                                                help: "mean luma change (dB of full scale) under which a picture counts as unchanged")
        static let hold = ConfigOption<Duration>("for", default: .seconds(2), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, noise, hold)
    }

    enum Stalled {
        static let hold = ConfigOption<Duration>("for", default: .seconds(5),
                                                 help: "no media from the source for this long (a live HLS playlist: as soon as its next segment is 1.5 target durations late)")
        static let schema = OptionSchema(AlarmSettings.on, hold)
    }
    enum SlowDownload {
        static let under = ConfigOption<Double>("under", .double(0...100), default: 1,
                                                help: "seconds of media per second of fetching, a segment's (1: real time)")
        static let hold = ConfigOption<Duration>("for", default: .seconds(10), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, under, hold)
    }
    enum BehindLive {
        static let over = ConfigOption<Duration>("over", default: .seconds(30), help: "latency behind live (the source's programme time, or the test signal's clock)")
        static let hold = ConfigOption<Duration>("for", default: .seconds(10), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, over, hold)
    }
    enum AVDrift {
        static let over = ConfigOption<Double>("over", .double(0...10_000), default: 45, help: "A/V offset (ms, either way) as the latency stage reads it")
        static let hold = ConfigOption<Duration>("for", default: .seconds(5), help: "how long before the alarm is raised")
        static let schema = OptionSchema(AlarmSettings.on, over, hold)
    }
    enum Floor {
        static let on = ConfigOption<Bool>("on", default: false, help: "true turns this check on (there is no floor that suits every stream)")
        static let under = ConfigOption<Bitrate>("under", default: Bitrate(bitsPerSecond: 100_000), help: "a stream's bitrate under which it is starved")
        static let hold = ConfigOption<Duration>("for", default: .seconds(10), help: "how long before the alarm is raised")
        static let schema = OptionSchema(on, under, hold)
    }
    enum Reconnecting {
        static let hold = ConfigOption<Duration>("for", default: .seconds(30), help: "reconnecting for this long")
        static let schema = OptionSchema(AlarmSettings.on, hold)
    }

    static let target = ConfigOption<Double>("target", .double(-70...0), default: -23, help: "the loudness target (LUFS) loud and quiet are measured from")
    static let every = ConfigOption<Duration>("every", default: .seconds(1), help: "how often to report loudness figures")
    static let silence = ConfigOption<OptionValues?>("silence", .object(Silence.schema), help: "sound under a level for a time")
    static let loud = ConfigOption<OptionValues?>("loud", .object(Loud.schema), help: "short-term loudness over the target for a time")
    static let quiet = ConfigOption<OptionValues?>("quiet", .object(Quiet.schema), help: "short-term loudness under the target for a time")
    static let clipping = ConfigOption<OptionValues?>("clipping", .object(Clipping.schema), help: "true peak over a ceiling")
    static let black = ConfigOption<OptionValues?>("black", .object(Black.schema), help: "a black picture for a time")
    static let frozen = ConfigOption<OptionValues?>("frozen", .object(Frozen.schema), help: "an unchanging picture for a time")
    static let stalled = ConfigOption<OptionValues?>("stalled", .object(Stalled.schema), help: "the source brings no new media")
    static let slowDownload = ConfigOption<OptionValues?>("slow-download", .object(SlowDownload.schema),
                                                          help: "an HLS source's segments fetched slower than they play")
    static let behindLive = ConfigOption<OptionValues?>("behind-live", .object(BehindLive.schema), help: "the stream plays too far behind live")
    static let avDrift = ConfigOption<OptionValues?>("av-drift", .object(AVDrift.schema), help: "sound and picture out of step")
    static let bitrate = ConfigOption<OptionValues?>("bitrate", .object(Floor.schema), help: "a stream's bitrate under a floor (off unless on: true)")
    static let reconnecting = ConfigOption<OptionValues?>("reconnecting", .object(Reconnecting.schema), help: "the source reconnecting for a time")
    static let schema = OptionSchema(target, every, silence, loud, quiet, clipping, black, frozen,
                                     stalled, slowDownload, behindLive, avDrift, bitrate, reconnecting)

    public var target: Double
    public var every: Duration
    public var checks: [AlarmKind: AlarmCheck]
    /// Black: the share of black pixels; the threshold is the luma level.
    public var blackShare: Double

    public init(_ options: OptionValues = OptionValues()) {
        target = options[Self.target]
        every = options[Self.every]
        let silence = options[Self.silence] ?? OptionValues()
        let loud = options[Self.loud] ?? OptionValues()
        let quiet = options[Self.quiet] ?? OptionValues()
        let clipping = options[Self.clipping] ?? OptionValues()
        let black = options[Self.black] ?? OptionValues()
        let frozen = options[Self.frozen] ?? OptionValues()
        checks = [
            .silence: AlarmCheck(on: silence[Self.on], threshold: silence[Silence.below], hold: silence[Silence.hold].seconds, clearAfter: 0),
            .loud: AlarmCheck(on: loud[Self.on], threshold: target + loud[Loud.over], hold: loud[Loud.hold].seconds, clearAfter: 0),
            .quiet: AlarmCheck(on: quiet[Self.on], threshold: target - quiet[Quiet.under], hold: quiet[Quiet.hold].seconds, clearAfter: 0),
            // A true peak is an instant: one alarm for peaks less than a second apart.
            .clipping: AlarmCheck(on: clipping[Self.on], threshold: clipping[Clipping.over], hold: 0, clearAfter: 1),
            .black: AlarmCheck(on: black[Self.on], threshold: black[Black.level], hold: black[Black.hold].seconds, clearAfter: 0),
            .frozen: AlarmCheck(on: frozen[Self.on], threshold: frozen[Frozen.noise], hold: frozen[Frozen.hold].seconds, clearAfter: 0),
        ]
        blackShare = black[Black.share]
        let stalled = options[Self.stalled] ?? OptionValues()
        let slow = options[Self.slowDownload] ?? OptionValues()
        let behind = options[Self.behindLive] ?? OptionValues()
        let drift = options[Self.avDrift] ?? OptionValues()
        let floor = options[Self.bitrate] ?? OptionValues()
        let reconnecting = options[Self.reconnecting] ?? OptionValues()
        checks[.stalled] = AlarmCheck(on: stalled[Self.on], threshold: 0, hold: stalled[Stalled.hold].seconds, clearAfter: 0)
        checks[.slowDownload] = AlarmCheck(on: slow[Self.on], threshold: slow[SlowDownload.under], hold: slow[SlowDownload.hold].seconds,
                                           clearAfter: 0)
        checks[.behindLive] = AlarmCheck(on: behind[Self.on], threshold: behind[BehindLive.over].seconds,
                                         hold: behind[BehindLive.hold].seconds, clearAfter: 0)
        checks[.avDrift] = AlarmCheck(on: drift[Self.on], threshold: drift[AVDrift.over], hold: drift[AVDrift.hold].seconds, clearAfter: 0)
        checks[.bitrate] = AlarmCheck(on: floor[Floor.on], threshold: Double(floor[Floor.under].bitsPerSecond) / 1000,
                                      hold: floor[Floor.hold].seconds, clearAfter: 0)
        checks[.reconnecting] = AlarmCheck(on: reconnecting[Self.on], threshold: 0, hold: reconnecting[Reconnecting.hold].seconds, clearAfter: 0)
    }

    /// The checks that are on for `stream`.
    func active(on stream: StreamKind) -> [AlarmKind] {
        AlarmKind.allCases.filter { $0.stream == stream && checks[$0]?.on == true }
    }
}
