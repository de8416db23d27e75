import GstKit

/// One publishing pipeline: the main pipeline's samples, through appsrc, into the output's
/// elements (a muxer and network sink, payloaders into webrtcbin, or rtmp2sink taking FLV tags:
/// see `PublishOutput`). Built (not started) on the publisher's queue; the output's secrets are
/// read only here, and not at all for a `picture`.
struct PublishingPipeline {
    let pipeline: Pipeline
    let output: Element
    let feed: any PublishFeed

    init(settings: StreamPublisher.Settings, generation: Int, picture: Bool = false,
         requestKeyframe: @escaping @Sendable () -> Void = {}) throws {
        let pipeline = Pipeline(name: "publish-\(generation)")
        let streams = settings.streams.sorted()
        let (inputs, output) = try settings.output.build(in: pipeline, streams: streams, picture: picture,
                                                             requestKeyframe: requestKeyframe)
        switch inputs {
        case .streams(let pads):
            var sources: [StreamKind: AppSrc] = [:]
            for stream in streams {
                guard let pad = pads[stream] else { throw BuildError("the \(settings.output.scheme) output takes no \(stream)") }
                sources[stream] = try Self.source(stream.rawValue, into: pad, in: pipeline)
            }
            feed = StreamSources(sources: sources)
        case .flvTags(let pad):
            let source = try Self.source("flv", into: pad, in: pipeline)
            source.caps = try Caps("video/x-flv")
            feed = FLVTagFeed(source: source, streamCaps: settings.streamCaps)
        }
        self.pipeline = pipeline
        self.output = output
    }

    /// What each appsrc queues before it drops its oldest (leaky downstream).
    static let queueBytes: UInt64 = 8_000_000

    private static func source(_ name: String, into pad: Pad, in pipeline: Pipeline) throws -> AppSrc {
        let source = try AppSrc.make(name: name)
        // Not live: a muxer then waits for every stream instead of timing out on the clock.
        source.configure(isLive: false, format: true)
        try source.element.set("max-bytes", queueBytes)
        try source.element.set("leaky-type", text: "downstream")
        // No queue after it: appsrc already queues, and pushes from a thread of its own.
        try pipeline.add(source.element)
        guard let out = source.element.staticPad("src") else { throw BuildError("appsrc has no src pad") }
        try out.link(pad)
        return source
    }
}
