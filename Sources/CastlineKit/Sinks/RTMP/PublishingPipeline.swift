import GstKit

/// One publishing pipeline: an appsrc per stream into flvmux into rtmp2sink. Built (not started)
/// on the publisher's queue; rtmp2sink's location, key included, is read only here.
struct PublishingPipeline {
    let pipeline: Pipeline
    let output: Element
    let sources: [StreamKind: AppSrc]

    /// `location`: in place of the real one (a picture of it: the key is not read).
    init(settings: RTMPPublisher.Settings, generation: Int, location: String? = nil) throws {
        let pipeline = Pipeline(name: "publish-\(generation)")
        let muxer = try ElementCatalog.make("flvmux")
        try muxer.set("streamable", true)
        let output = try ElementCatalog.make("rtmp2sink")
        try output.set("location", text: try location ?? settings.location())
        // Timestamps are the main pipeline's running time; pacing happened there.
        try output.set("sync", false)
        if settings.insecureTLS { try output.set("tls-validation-flags", text: "0") }
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
            guard let pad = muxer.requestPad(stream == .video ? "video" : "audio"), let out = source.element.staticPad("src") else {
                throw BuildError("flvmux gave no \(stream) pad")
            }
            try out.link(pad)
            sources[stream] = source
        }
        self.pipeline = pipeline
        self.output = output
        self.sources = sources
    }
}
