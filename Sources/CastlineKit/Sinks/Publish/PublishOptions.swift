import PipelineConfig

/// The options every publishing sink (`rtmp`, `srt`) takes alike.
public enum PublishOptions {
    /// When to stop retrying.
    public static let maxReconnects = ConfigOption<Int?>("max-reconnects", .int(0...1_000_000),
                                                         help: "give up after this many failed reconnects in a row; default unlimited")
}
