import GstKit
import Synchronization
import Timing

extension StreamPublisher {
    /// AAC as both FLV and MPEG-TS take it from a publisher's appsink: raw frames, no ADTS.
    static let aacFraming = "audio/mpeg,mpegversion=4,stream-format=raw"

    /// A publishing sink's bin in the main pipeline: an appsink per stream, in the framing
    /// `framing` gives (the muxer's), paced by the clock (a file goes out in real time, as a live
    /// source would), each handing its samples to a new publisher to `output`.
    static func entry(inputs: [StreamKind: StreamForm], name: String, framing: (StreamKind) -> String?,
                      output: any PublishOutput, maxReconnects: Int?, context: ComponentContext) throws -> (Bin, StreamPublisher) {
        let bin = Bin(name: name)
        var sinks: [StreamKind: AppSink] = [:]
        for stream in inputs.keys.sorted() {
            let sink = try AppSink.make(name: "\(name)-\(stream)")
            if let caps = framing(stream) { sink.caps = try Caps(caps) }
            try sink.element.set("sync", true)
            try bin.add(sink.element)
            try bin.ghost(sink.element.staticPad("sink"), as: stream.rawValue)
            sinks[stream] = sink
        }
        let videoPad = sinks[.video]?.element.staticPad("sink")
        let entered = sinks
        let timed = sinks.values.first?.element
        let publisher = StreamPublisher(
            settings: .init(output: output, streams: Set(inputs.keys), maxReconnects: maxReconnects, backoff: Backoff(),
                            streamCaps: { entered.compactMapValues { $0.element.staticPad("sink")?.currentCaps } }),
            context: context,
            requestKeyframe: { videoPad?.pushEvent(.upstreamForceKeyUnit()) },
            mainTiming: { timed.flatMap { sink in sink.clock.flatMap { clock in sink.baseTime.map { (clock, $0) } } } })
        for (stream, sink) in sinks {
            sink.onSample { [weak publisher] sample in
                publisher?.accept(sample, on: stream)
                return .ok
            }
        }
        return (bin, publisher)
    }
}

/// A publishing sink's publisher, once its bin is made: what `srt` and `whip` keep of it.
final class PublisherSlot: Sendable {
    private let publisher = Mutex<StreamPublisher?>(nil)

    /// The sink's bin (see `StreamPublisher.entry`), its publisher kept here.
    func makeBin(inputs: [StreamKind: StreamForm], name: String, framing: (StreamKind) -> String?, output: any PublishOutput,
                 maxReconnects: Int?, context: ComponentContext) throws -> Bin {
        let (bin, made) = try StreamPublisher.entry(inputs: inputs, name: name, framing: framing, output: output,
                                                    maxReconnects: maxReconnects, context: context)
        publisher.withLock { $0 = made }
        return bin
    }

    /// The publishing pipeline as it would be built, for `graph --gst`.
    var ownPipelines: [Pipeline] { publisher.withLock { $0 }?.unstartedPipeline().map { [$0] } ?? [] }

    func finish(drain: Duration) async -> SinkVerdict {
        await publisher.withLock { $0 }?.finish(drain: drain) ?? .quiet
    }
}
