import GstKit
import PipelineConfig

/// A `source:` kind. Built-in: castline's own list, not plugins.
public protocol SourceComponent: ComponentDescription {
    init(spec: ComponentSpec, context: ComponentContext) throws
    /// Network work before the graph is built (fetching a playlist, waiting for a stream
    /// to go live); `wanted` is the streams the pipeline uses. Cancellable.
    nonisolated(nonsending) func prepare(wanted: Set<StreamKind>) async throws
    /// The streams this source delivers and the form of each.
    func streams() throws -> [StreamKind: StreamForm]
    /// Streams this source can also deliver still encoded (parsed, not decoded), so
    /// nothing is decoded or re-encoded when whatever comes next takes them as they are.
    func encodedForms() throws -> [StreamKind: StreamForm]
    /// The run is about to end with end-of-stream: let it through (a looping file would restart).
    func willStop()
    /// After `willStop`, every stream ends at the source's outlets by itself. The runner then sends
    /// no end-of-stream into the pipeline: that takes the pipeline's state lock, and a looping
    /// file's decoder being replaced at that moment deadlocked against it (seen in FileLoopTests).
    var endsStreamsOnStop: Bool { get }
    /// Before a swap replaces `running` with this source: when both reach the same peer over a
    /// connection the peer may hold to one (an SRT caller), this source will play from `running`'s
    /// rather than make another; `running` is untouched until `takeOver`.
    func share(_ running: any SourceComponent)
    /// The swap is applied: a shared connection is this source's from now on, and feeds it.
    func takeOver()
    /// Called once its part of the run is over (the run ended, or a swap replaced the source):
    /// ends what it holds open at the far end (a WHEP session).
    nonisolated(nonsending) func finish() async
    /// A bin with one src ghost pad per stream in `streams` (what `streams()` said), named after it.
    func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin
}

/// What a sink says of its part once the run is over, from what it observed.
public enum SinkVerdict: Sendable, Equatable {
    /// Nothing worth a line.
    case quiet
    /// A line for the user: what was written or published.
    case done(String)
    /// The sink did not do its job (a publish the far end never accepted): the run fails with this line.
    case failed(String)
}

/// A `sinks:` kind.
public protocol SinkComponent: ComponentDescription, Sendable {
    init(spec: ComponentSpec, context: ComponentContext) throws
    /// What this sink takes on a stream; nil when it does not take that stream.
    func requirement(for stream: StreamKind) -> FormRequirement?
    /// A bin with one sink ghost pad per input, named after the stream.
    func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin
    /// Checks what can be checked before anything starts (reachability, certificates): one clear line on failure.
    nonisolated(nonsending) func preflight() async throws
    /// Called once the run is over; `completed` when every stream reached its end cleanly.
    /// May wait (without blocking a thread) to drain: an RTMP publish sends its end.
    nonisolated(nonsending) func finish(completed: Bool) async -> SinkVerdict
    /// Pipelines of its own it runs beside the main one (an RTMP publish), built but not
    /// started, its secrets not in them: for `graph --gst`.
    var ownPipelines: [Pipeline] { get }
    /// Each stream ends on an element of its own that takes any form of it (a fakesink): as the
    /// only sink, taking one stream, the builder puts neither a queue nor a raw converter in
    /// front (a muxer needs both: a thread per input so one stream never starves another, and
    /// the formats it takes).
    var takesStreamsAsTheyCome: Bool { get }
    /// It takes its media at the pipeline clock (a sound card, a window, a paced null sink or
    /// recording): what is queued in front of it when the run stops comes after the stop, and is
    /// dropped rather than waited for.
    var rendersAtTheClock: Bool { get }
    /// When the run stops, it takes what is still queued in front of it at once (`stopPacing`)
    /// rather than have it dropped: a paced recording writes the rest of what came, as the stats counted it.
    var takesTheRestAtOnce: Bool { get }
    /// The run is stopping: from now on it takes what comes as fast as it comes.
    func stopPacing()
    /// The caps a stream must come in, when the sink fixes its framing (FLV takes H.264 as
    /// `stream-format=avc`): sinks that fix the same one are served by one parser before the
    /// tee, not a parser each. nil: the builder converts for this sink alone.
    func framing(for stream: StreamKind) -> String?
    /// The H.264 profile the far end is told it gets (nil: any). An encoder the builder puts in for
    /// the sink makes it; H.264 that comes encoded, its profile unknown until it flows, is encoded again.
    var h264Profile: String? { get }
    /// It sends the media to a far end (a publish): a run with destinations is for them, and
    /// ends once none is left, finishing any recording beside them.
    static var isDestination: Bool { get }
    /// Where a destination publishes, no secret in it (its URL): what names it among several.
    var destinationName: String? { get }
}

extension SourceComponent {
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {}
    public func encodedForms() throws -> [StreamKind: StreamForm] { [:] }
    public func willStop() {}
    public func share(_ running: any SourceComponent) {}
    public func takeOver() {}
    public var endsStreamsOnStop: Bool { false }
    nonisolated(nonsending) public func finish() async {}
}

extension SinkComponent {
    nonisolated(nonsending) public func preflight() async throws {}
    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict { .quiet }
    public var ownPipelines: [Pipeline] { [] }
    public var takesStreamsAsTheyCome: Bool { false }
    public var rendersAtTheClock: Bool { false }
    public var takesTheRestAtOnce: Bool { false }
    public func stopPacing() {}
    public func framing(for stream: StreamKind) -> String? { nil }
    public var h264Profile: String? { nil }
    public var destinationName: String? { nil }
    public static var isDestination: Bool { false }
    public var isDestination: Bool { Self.isDestination }
}

extension Bin {
    /// Ghosts `pad` under `name` (the stream's name for source and sink bins).
    public func ghost(_ pad: Pad?, as name: String) throws {
        guard let pad else { throw BuildError("internal: no pad to expose as \(name)") }
        try addGhostPad(name: name, target: pad)
    }
}
