import GstKit

/// The one way castline wraps work in a bin: elements linked in order, the
/// first one's sink pad and the last one's src pad ghosted as `sink` and `src`
/// (sink bins name their input after the stream instead).
public enum BinChain {
    public static func make(
        _ name: String, _ elements: [Element], sinkPad: String = "sink", srcPad: String = "src"
    ) throws -> Bin {
        guard let first = elements.first, let last = elements.last else {
            throw BuildError("internal: empty chain \(name)")
        }
        let bin = Bin(name: name)
        for element in elements { try bin.add(element) }
        for (upstream, downstream) in zip(elements, elements.dropFirst()) {
            try upstream.link(downstream)
        }
        if let sink = first.staticPad("sink") { try bin.addGhostPad(name: sinkPad, target: sink) }
        if let src = last.staticPad("src") { try bin.addGhostPad(name: srcPad, target: src) }
        return bin
    }

    /// Makes elements by factory name and chains them.
    public static func make(_ name: String, factories: [String]) throws -> Bin {
        try make(name, factories.map { try ElementCatalog.make($0) })
    }

    /// A capsfilter for `caps` text.
    public static func capsFilter(_ caps: String) throws -> Element {
        let filter = try ElementCatalog.make("capsfilter")
        try filter.set("caps", Caps(caps))
        return filter
    }

    /// A stage that reads raw samples itself: the converter and caps that give it audio as
    /// interleaved F32 (one layout to read), or video in a layout whose first plane is luma.
    public static func rawForReading(_ stream: StreamKind) throws -> [Element] {
        switch stream {
        case .audio:
            [try ElementCatalog.make("audioconvert"), try capsFilter("audio/x-raw,format=F32LE,layout=interleaved")]
        case .video:
            [try ElementCatalog.make("videoconvert"), try capsFilter("video/x-raw,format={I420,YV12,NV12,NV21,Y42B,Y444,GRAY8}")]
        }
    }

    /// A queue that decouples threads and holds up to `time` of media.
    public static func queue(maxTime: Duration = .seconds(2)) throws -> Element {
        let queue = try ElementCatalog.make("queue")
        try queue.set("max-size-buffers", UInt32(0))
        try queue.set("max-size-bytes", UInt32(0))
        try queue.set("max-size-time", UInt64(ClockTime(maxTime).nanoseconds))
        return queue
    }
}
