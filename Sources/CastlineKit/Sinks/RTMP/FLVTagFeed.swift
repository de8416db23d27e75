import GstKit
import Synchronization

/// One appsrc of FLV tags, written from each stream's samples by an `FLVTagWriter` (see it for
/// why not flvmux). Tags are written and pushed under one lock, so the metadata and a stream's
/// configuration enter before anything that needs them, whichever stream's thread comes first.
final class FLVTagFeed: PublishFeed {
    let source: AppSrc
    private let writer = Mutex(Writing())
    /// The writer, and each stream's last caps with their `codec_data` (read again only when the caps change).
    private struct Writing {
        var tags = FLVTagWriter()
        var configs: [StreamKind: (caps: Caps, config: [UInt8]?)] = [:]
    }
    /// The caps of each stream where it enters the main pipeline's appsinks, for `onMetaData`.
    private let streamCaps: @Sendable () -> [StreamKind: Caps]

    init(source: AppSrc, streamCaps: @escaping @Sendable () -> [StreamKind: Caps]) {
        self.source = source
        self.streamCaps = streamCaps
    }

    func push(_ sample: Sample, on stream: StreamKind) {
        let running = sample.runningTime
        guard let dts = running.dts ?? running.pts else { return }
        let caps = sample.caps
        writer.withLock { writer in
            var config = writer.configs[stream]?.config
            if let caps, writer.configs[stream].map({ $0.caps != caps }) ?? true {
                config = caps.structure(at: 0)?.bytes("codec_data")
                writer.configs[stream] = (caps, config)
            }
            let unit = FLVTagWriter.Unit(stream: stream, dts: dts.nanoseconds, pts: (running.pts ?? dts).nanoseconds,
                                         isKeyframe: !sample.isDelta, config: config)
            let tags = sample.withUnsafeBytes { payload in
                writer.tags.tags(for: unit, payload: payload, metadata: { Self.metadata(streamCaps()) })
            } ?? []
            // The tag's time is in its bytes; the buffer's is the running time, for the pipeline.
            for tag in tags {
                // A full queue drops its oldest tags (rtmp2sink still connecting, a stalled uplink),
                // which may be the configurations: they go again, so what follows decodes.
                if source.queuedBytes + UInt64(tag.count) > PublishingPipeline.queueBytes { writer.tags.resendConfigurations() }
                tag.withUnsafeBytes { _ = source.push($0, pts: dts, dts: dts, duration: nil, isDelta: false, discont: false) }
            }
        }
    }

    func endOfStream() { _ = source.endOfStream() }

    static func metadata(_ caps: [StreamKind: Caps]) -> FLVTagWriter.Metadata {
        let video = caps[.video]?.structure(at: 0), audio = caps[.audio]?.structure(at: 0)
        return FLVTagWriter.Metadata(
            width: video?.int("width"), height: video?.int("height"),
            framerate: video?.fraction("framerate").flatMap { $0.1 > 0 && $0.0 > 0 ? Double($0.0) / Double($0.1) : nil },
            audioRate: audio?.int("rate"), audioChannels: audio?.int("channels"))
    }
}
