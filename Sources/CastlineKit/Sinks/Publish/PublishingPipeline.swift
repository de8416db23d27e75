import GstKit

/// One publishing pipeline: an appsrc per stream into the output's muxer and network sink
/// (see `PublishOutput`). Built (not started) on the publisher's queue; the output's secrets
/// are read only here, and not at all for a `picture`.
struct PublishingPipeline {
    let pipeline: Pipeline
    let output: Element
    let sources: [StreamKind: AppSrc]

    init(settings: StreamPublisher.Settings, generation: Int, picture: Bool = false) throws {
        let pipeline = Pipeline(name: "publish-\(generation)")
        let (muxer, output) = try settings.output.makeElements(picture: picture)
        try pipeline.add(muxer, output)
        try muxer.link(output)
        var sources: [StreamKind: AppSrc] = [:]
        for stream in settings.streams.sorted() {
            let source = try AppSrc.make(name: stream.rawValue)
            // Not live: the muxer then waits for every stream instead of timing out on the clock.
            source.configure(isLive: false, format: true)
            try source.element.set("max-bytes", UInt64(8_000_000))
            try source.element.set("leaky-type", text: "downstream")
            // No queue after it: appsrc already queues, and pushes from a thread of its own.
            try pipeline.add(source.element)
            guard let pad = muxer.requestPad(settings.output.muxerPad(for: stream)), let out = source.element.staticPad("src") else {
                throw BuildError("\(muxer.factoryName ?? "the muxer") gave no \(stream) pad")
            }
            try out.link(pad)
            sources[stream] = source
        }
        self.pipeline = pipeline
        self.output = output
        self.sources = sources
    }
}
