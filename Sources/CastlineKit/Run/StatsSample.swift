/// Numbers a component measured over its last interval, for one stream (or
/// pipeline-wide when `stream` is nil). Figures carry their unit in the key:
/// `bitrate_kbps`, `position_s`, `reconnects`.
public struct StatsSample: Sendable, Equatable {
    /// The reporting component's name (its `name:`, or `stats0`, `rtmp1`...).
    public var stage: String
    public var stream: StreamKind?
    public var figures: [String: Double]

    public init(stage: String, stream: StreamKind?, figures: [String: Double]) {
        self.stage = stage
        self.stream = stream
        self.figures = figures
    }

    /// Where what is heard now lies in the stream, as a player shows it.
    public var playPosition: Double? { figures[StatsFigure.position] }

    /// How far behind live what plays is, where this part knows it: the source's programme time,
    /// the test signal's clock per stream; several may know it, and the most counts.
    public var behindLive: Double? {
        [StatsFigure.latency, "latency_audio_s", "latency_video_s"].compactMap { figures[$0] }.max()
    }
}

