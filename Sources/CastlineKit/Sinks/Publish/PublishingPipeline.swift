import GstKit

/// One publishing pipeline: an appsrc per stream into the output's elements (a muxer and
/// network sink, or payloaders into webrtcbin: see `PublishOutput`). Built (not started) on the
/// publisher's queue; the output's secrets are read only here, and not at all for a `picture`.
struct PublishingPipeline {
    let pipeline: Pipeline
    let output: Element
    let sources: [StreamKind: AppSrc]

    init(settings: StreamPublisher.Settings, generation: Int, picture: Bool = false,
         requestKeyframe: @escaping @Sendable () -> Void = {}) throws {
        let pipeline = Pipeline(name: "publish-\(generation)")
        let streams = settings.streams.sorted()
        let (inputs, output) = try settings.output.build(in: pipeline, streams: streams, picture: picture,
                                                             requestKeyframe: requestKeyframe)
        var sources: [StreamKind: AppSrc] = [:]
        for stream in streams {
            let source = try AppSrc.make(name: stream.rawValue)
            // Not live: the muxer then waits for every stream instead of timing out on the clock.
            source.configure(isLive: false, format: true)
            try source.element.set("max-bytes", UInt64(8_000_000))
            try source.element.set("leaky-type", text: "downstream")
            // No queue after it: appsrc already queues, and pushes from a thread of its own.
            try pipeline.add(source.element)
            guard let pad = inputs[stream], let out = source.element.staticPad("src") else {
                throw BuildError("the \(settings.output.scheme) output takes no \(stream)")
            }
            try out.link(pad)
            sources[stream] = source
        }
        self.pipeline = pipeline
        self.output = output
        self.sources = sources
    }
}
