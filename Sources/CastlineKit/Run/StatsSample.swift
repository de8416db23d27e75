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
}

