import GstKit
import PipelineConfig

/// Takes every stream and throws it away, in real time: for headless runs and tests.
public final class NullSink: SinkComponent {
    public static let kind = "null"
    public static let summary = "discard every stream, at the pace of the clock"
    public static let sync = ConfigOption<Bool>("sync", default: true, help: "keep to the pipeline clock (false: as fast as possible)")
    public static let decode = ConfigOption<Bool>("decode", default: false,
                                     help: "decode every stream before dropping it (what playing costs, without a device)")
    public static let schema = OptionSchema(sync, decode)

    let sync: Bool
    let decode: Bool

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        sync = spec.options[Self.sync]
        decode = spec.options[Self.decode]
    }

    public func requirement(for stream: StreamKind) -> FormRequirement? { decode ? .raw : .any }

    /// A fakesink per stream, which takes whatever comes.
    public var takesStreamsAsTheyCome: Bool { true }
    public var rendersAtTheClock: Bool { sync }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        for stream in inputs.keys.sorted() {
            let sink = try ElementCatalog.make("fakesink")
            try sink.set("sync", sync)
            // Nothing to render, so no time to set aside for it: a live pipeline would otherwise ask
            // for 20 ms of buffering upstream (a queue) and warn that the pipeline lacks queues.
            try sink.set("processing-deadline", UInt64(0))
            try bin.add(sink)
            try bin.ghost(sink.staticPad("sink"), as: stream.rawValue)
        }
        return bin
    }
}
