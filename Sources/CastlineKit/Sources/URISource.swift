import Foundation
import GstKit
import PipelineConfig

/// Anything GStreamer can open by URI: streams are discovered first, so the
/// graph is known before it runs, then decoded by uridecodebin3.
public class URISource: SourceComponent {
    public class var kind: String { "uri" }
    public class var summary: String { "any URI GStreamer can open (file://, http(s)://, rtsp://, ...)" }
    public class var schema: OptionSchema {
        OptionSchema([OptionField("uri", .string, required: true, help: "the URI to play")], shorthand: "uri")
    }

    let uri: String
    let keyPath: String

    public required init(spec: ComponentSpec) throws {
        guard let uri = spec.options.string("uri"), URL(string: uri)?.scheme != nil else {
            throw BuildError("not a URI (try file:///path/to/media.mp4 or https://host/stream.m3u8)",
                             at: "\(spec.keyPath).uri")
        }
        self.uri = uri
        keyPath = spec.keyPath
    }

    init(uri: String, keyPath: String) {
        self.uri = uri
        self.keyPath = keyPath
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        let found: [DiscoveredStream]
        do {
            found = try MediaDiscoverer.discover(uri: uri, timeout: .seconds(15))
        } catch {
            throw BuildError("cannot open \(uri): \(error)", at: keyPath)
        }
        var streams: [StreamKind: StreamForm] = [:]
        for stream in found {
            switch stream.type {
            case .audio: streams[.audio] = .raw
            case .video: streams[.video] = .raw
            default: continue
            }
        }
        guard !streams.isEmpty else {
            throw BuildError("\(uri) has no audio or video stream castline can use", at: keyPath)
        }
        return streams
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        let decoder = try ElementCatalog.make("uridecodebin3")
        try decoder.set("uri", text: uri)
        try bin.add(decoder)
        // One queue per stream gives the bin fixed src pads before any media flows.
        var outlets: [StreamKind: Element] = [:]
        for stream in streams.keys.sorted() {
            let queue = try BinChain.queue()
            try bin.add(queue)
            try bin.ghost(queue.staticPad("src"), as: stream.rawValue)
            outlets[stream] = queue
        }
        let targets = outlets
        decoder.onPadAdded { pad in
            guard let stream = Self.streamKind(of: pad), let queue = targets[stream],
                  let sink = queue.staticPad("sink"), !sink.isLinked else { return }
            try? pad.link(sink)
        }
        return bin
    }

    static func streamKind(of pad: Pad) -> StreamKind? {
        let type = pad.currentCaps?.mediaType ?? pad.queryCaps()?.mediaType ?? pad.name
        if type.hasPrefix("audio") { return .audio }
        if type.hasPrefix("video") { return .video }
        return nil
    }
}

/// A local file: the `uri` source with a path that is checked up front.
public final class FileSource: URISource {
    public override class var kind: String { "file" }
    public override class var summary: String { "a media file GStreamer can demux (mp4, mkv, ts, wav, ...)" }
    public override class var schema: OptionSchema {
        OptionSchema([OptionField("path", .string, required: true, help: "path to the media file")], shorthand: "path")
    }

    public required init(spec: ComponentSpec) throws {
        let path = spec.options.string("path") ?? ""
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw BuildError("no such file \"\(path)\" (check the path)", at: "\(spec.keyPath).path")
        }
        super.init(uri: URL(fileURLWithPath: path).absoluteString, keyPath: spec.keyPath)
    }
}
