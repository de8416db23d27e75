import GstKit

/// How a publishing pipeline takes the main pipeline's samples: an appsrc per stream into a
/// muxer or payloaders (`StreamSources`), or one appsrc of FLV tags castline writes itself
/// (`FLVTagFeed`). Pushed from the main pipeline's streaming threads, one per stream.
protocol PublishFeed: Sendable {
    func push(_ sample: Sample, on stream: StreamKind)
    /// No more samples: end-of-stream into the pipeline, which then drains.
    func endOfStream()
}

/// Where an output's elements take the streams.
enum PublishInputs {
    /// A pad per stream, each fed by an appsrc of its own.
    case streams([StreamKind: Pad])
    /// One pad that takes FLV tags (rtmp2sink's).
    case flvTags(Pad)
}

/// An appsrc per stream, each sample pushed as it came, its times made running time.
struct StreamSources: PublishFeed {
    let sources: [StreamKind: AppSrc]

    func push(_ sample: Sample, on stream: StreamKind) { _ = sources[stream]?.pushInRunningTime(sample) }
    func endOfStream() { for source in sources.values { _ = source.endOfStream() } }
}
