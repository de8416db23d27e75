import GstKit
import Synchronization
import Timing

extension StreamPublisher {
    /// AAC as both FLV and MPEG-TS take it from a publisher's appsink: raw frames, no ADTS.
    static let aacFraming = "audio/mpeg,mpegversion=4,stream-format=raw"

    /// A publishing sink's bin in the main pipeline: an appsink per stream, in the framing
    /// `framing` gives (the muxer's), paced by the clock as `pacing` says, each handing its
    /// samples to a new publisher to `output`.
    static func entry(inputs: [StreamKind: StreamForm], name: String, framing: (StreamKind) -> String?, pacing: EntryPacing = .clock,
                      output: any PublishOutput, maxReconnects: Int?, context: ComponentContext) throws -> (Bin, StreamPublisher) {
        let bin = Bin(name: name)
        var sinks: [StreamKind: AppSink] = [:]
        for stream in inputs.keys.sorted() {
            let sink = try AppSink.make(name: "\(name)-\(stream)")
            if let caps = framing(stream) { sink.caps = try Caps(caps) }
            try sink.element.set("sync", true)
            if pacing == .clockUnlessLive, let pad = sink.element.staticPad("sink") {
                // Asked again at each new segment: a swap may bring a source that is not live.
                let element = sink.element
                pad.addProbe(.eventDownstream) { info in
                    if info.event?.kind == .segment { try? element.set("sync", info.pad?.upstreamIsLive != true) }
                    return .ok
                }
            }
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

/// How a publisher's appsinks keep time.
enum EntryPacing: Sendable, Equatable {
    /// On the clock: a file goes out in real time, as a live source would, and the streams reach
    /// the publishing pipeline's muxer in time order.
    case clock
    /// On the clock only when what comes is not live. A live source is paced already; where each
    /// stream goes out on its own (RTP), a wait on the clock for every buffer would only add the
    /// pipeline's latency, and a thread's wake-up per buffer.
    case clockUnlessLive
}

/// A publishing sink's publisher, once its bin is made: what `srt` and `whip` keep of it.
final class PublisherSlot: Sendable {
    private let publisher = Mutex<StreamPublisher?>(nil)

    /// The sink's bin (see `StreamPublisher.entry`), its publisher kept here.
    func makeBin(inputs: [StreamKind: StreamForm], name: String, framing: (StreamKind) -> String?, pacing: EntryPacing = .clock,
                 output: any PublishOutput, maxReconnects: Int?, context: ComponentContext) throws -> Bin {
        let (bin, made) = try StreamPublisher.entry(inputs: inputs, name: name, framing: framing, pacing: pacing, output: output,
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
