import Foundation
import GstKit
import Synchronization
import PipelineConfig

/// Anything GStreamer can open by URI: streams are discovered first, so the
/// graph is known before it runs, then decoded by uridecodebin3.
public class URISource: SourceComponent {
    public class var kind: String { "uri" }
    public class var summary: String { "any URI GStreamer can open (file://, http(s)://, rtsp://, ...)" }
    public class var schema: OptionSchema {
        OptionSchema(uri, Credentials.key, Credentials.keyFile, Credentials.passphrase, HLSSource.endAfter, shorthand: "uri")
    }

    public static let uri = ConfigOption<String?>("uri", required: true, help: "the URI to play")

    /// What is played; a playlist source settles it in `prepare`.
    var uri: String
    let keyPath: String
    let loop: Bool
    let events: EventEmitter
    /// What discovery found, once: it prerolls the media, which takes a moment.
    private var discovered: [DiscoveredStream]?
    private var fileLoop: FileLoop?
    /// The decoder that runs, swapped for a fresh one on a restart or a loop's next pass.
    private let slot = DecoderSlot()
    /// Set by a stop: each stream then ends at the bin's outlet.
    private let ends = OutletEnds()
    /// An srt:// URI's connection, read for its streams and then played from.
    private var srt: SRTConnection?
    /// The streams the SRT connection's program map lists.
    private var srtStreams: [StreamKind: Codec?]?
    /// How long an SRT stream may bring nothing before it has ended.
    private var srtEndAfter: Duration = .zero
    /// A credential's variable not set yet: see `unresolvedCredential(_:)`.
    private(set) var unresolvedCredential: String?
    /// The running source whose SRT connection this one takes over when a swap is applied, and
    /// the feed it will take (see `share`).
    private var sharing: (running: URISource, feed: AppSrc?)?

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        guard let uri = spec.options[Self.uri], let parsed = URL(string: uri), parsed.scheme != nil else {
            throw BuildError("not a URI (try file:///path/to/media.mp4 or https://host/stream.m3u8)",
                             at: "\(spec.keyPath).uri")
        }
        try requireValidPort(parsed.port, at: "\(spec.keyPath).uri")
        self.uri = try Self.withCredentials(uriScheme(uri) == "srt" ? SRTStreamID.escaped(uri) : uri, spec.options, at: spec.keyPath,
                                            events: context.events)
        keyPath = spec.keyPath
        unresolvedCredential = Self.unresolvedCredential(spec.options)
        loop = false
        events = context.events
        if uriScheme(uri) == "srt" {
            srtEndAfter = spec.options[HLSSource.endAfter]
            srt = SRTConnection(uri: self.uri, endAfter: srtEndAfter, context: context)
        }
    }

    /// `events`: where a loop that cannot go on says so.
    init(uri: String, keyPath: String, loop: Bool, events: EventEmitter = .discarding) {
        self.uri = uri
        self.keyPath = keyPath
        self.loop = loop
        self.events = events
    }

    /// How long discovery may take to preroll the media.
    private static let discoveryTimeout: Duration = .seconds(15)

    /// What `prepare` found; a caller that did not prepare (a graph built directly) waits for it here.
    private func discover() throws -> [DiscoveredStream] {
        if let discovered { return discovered }
        guard srt == nil else { throw BuildError("the SRT stream has not been read yet", at: keyPath) }
        try refuseUnresolvedCredential()
        do {
            let found = try MediaDiscoverer.discover(uri: uri, timeout: Self.discoveryTimeout)
            discovered = found
            return found
        } catch {
            throw discoveryFailed(error)
        }
    }

    private func discoveryFailed(_ error: GstError) -> BuildError {
        if case .missingDecoder(let description, let caps) = error {
            return BuildError("cannot play \(uri): \(ElementCatalog.missingDecoderMessage(description: description, caps: caps))",
                              at: keyPath, badInput: true)
        }
        // A local file that does not play is what was given, not trouble in reaching it.
        let local = uriScheme(uri) == "file"
        return BuildError("cannot open \(uri): \(error)\(local ? " (is it a media file? ffprobe tells what it holds)" : "")", at: keyPath,
                          badInput: local)
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        let streams = try knownStreams().mapValues { _ in StreamForm.raw }
        guard !streams.isEmpty else {
            throw BuildError("\(uri) has no audio or video stream castline can use", at: keyPath, badInput: uriScheme(uri) == "file")
        }
        return streams
    }

    /// The streams whose codec castline knows, which can be kept encoded.
    public func encodedForms() throws -> [StreamKind: StreamForm] {
        try knownStreams().compactMapValues { $0.map { StreamForm.encoded($0) } }
    }

    /// The first audio and video stream, each with its codec (nil: one castline does
    /// not know, so it is decoded). Found by discovery; a kind built on this one may
    /// know them without it.
    func knownStreams() throws -> [StreamKind: Codec?] {
        if let srtStreams { return srtStreams }
        var found: [StreamKind: Codec?] = [:]
        for stream in try discover() {
            let kind: StreamKind
            switch stream.type {
            case .audio: kind = .audio
            case .video: kind = .video
            default: continue
            }
            guard found[kind] == nil else { continue }
            // Only a codec castline knows is kept encoded; raw and unknown streams are decoded
            // (a WAV's stream is reported as audio/x-wav, for one).
            let caps = try? Caps(stream.caps)
            found[kind] = .some(Codec(mediaType: stream.mediaType, mpegVersion: caps?.structure(at: 0)?.int("mpegversion")))
        }
        return found
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        // Decoding stops at what each stream is wanted in: raw, or parsed but still encoded;
        // a stream nobody wants stops encoded and ends in a discard, never decoded.
        let unwanted = try encodedForms().filter { streams[$0.key] == nil }
        let stops = try Caps(streams.merging(unwanted) { wanted, _ in wanted }
            .map { Self.stopCaps($0.key, $0.value) }.joined(separator: "; "))
        let decoder = try makeDecoder(stops: stops, in: bin)
        if srt == nil { try bin.add(decoder) }
        // Each pass of a loop is played by a fresh decoder (see FileLoop); a hook that a
        // kind built on this one adds to its decoder is not needed there (only files loop).
        // The slot is held weakly: it holds the bin, whose pads hold the loop.
        let loop = self.loop ? FileLoop(streams: Set(streams.keys.map(\.rawValue))) { [weak slot, uri, events] in
            do {
                try slot?.replace(unlinkFirst: true) { try Self.freshDecoder(uri: uri, stops: $0) }
            } catch {
                events.emit(.warning("cannot play \(uri) again, the loop stops here: \(error)"))
            }
        } : nil
        fileLoop = loop
        // The decoder links to each stream's outlet queue, or to the loop's joint before it.
        let queues = try Self.outletQueues(streams.keys, in: bin)
        var outlets = queues
        for (stream, queue) in queues.sorted(by: { $0.key < $1.key }) {
            guard let pad = queue.staticPad("sink") else { continue }
            if let loop {
                let joint = try FileLoop.makeJoint()
                try bin.add(joint)
                try joint.link(queue)
                if let inlet = joint.staticPad("sink") { loop.watch(inlet: inlet, outlet: pad, stream: stream.rawValue) }
                outlets[stream] = joint
            }
            ends.watch(pad, stream: stream)
            outletMade(pad, stream: stream)
        }
        Self.link(decoder, to: outlets)
        slot.start(DecoderSlot.Running(bin: bin, decoder: decoder, stops: stops, outlets: outlets))
        return bin
    }

    private func makeDecoder(stops: Caps, in bin: Bin) throws -> Element {
        guard let srt else {
            let decoder = try Self.freshDecoder(uri: uri, stops: stops)
            decoderMade(decoder)
            return decoder
        }
        let appsrc = try AppSrc.make()
        appsrc.caps = try Caps(Self.transportStream)
        try bin.add(appsrc.element)
        let decoder = try ElementCatalog.make("decodebin3")
        try decoder.set("caps", stops)
        if sharing != nil { sharing?.feed = appsrc } else { srt.feed(appsrc) }
        try bin.add(decoder)
        try appsrc.element.link(decoder)
        return decoder
    }

    /// What an SRT stream carries.
    static let transportStream = "video/mpegts, systemstream=(boolean)true, packetsize=(int)188"

    private static func freshDecoder(uri: String, stops: Caps) throws -> Element {
        let decoder = try ElementCatalog.make("uridecodebin3")
        try decoder.set("uri", text: uri)
        try decoder.set("caps", stops)
        return decoder
    }

    /// One outlet per stream, ghosted as the bin's src pad of that name: fixed src pads
    /// before any media flows. A queue (short: a stop drains what is queued there), or,
    /// behind a decoder that queues already (`threaded: false`), an identity: a queue's
    /// thread is one more wake-up for every buffer.
    static func outletQueues(_ streams: some Collection<StreamKind>, in bin: Bin,
                             threaded: Bool = true) throws -> [StreamKind: Element] {
        var outlets: [StreamKind: Element] = [:]
        for stream in streams.sorted() {
            let queue = threaded ? try BinChain.queue(maxTime: .milliseconds(500)) : try ElementCatalog.make("identity")
            try bin.add(queue)
            try bin.ghost(queue.staticPad("src"), as: stream.rawValue)
            outlets[stream] = queue
        }
        return outlets
    }

    /// Links each stream the decoder brings to its outlet (queue, or a loop's joint) as it appears.
    static func link(_ decoder: Element, to outlets: [StreamKind: Element]) {
        decoder.onPadAdded { pad in
            guard let stream = Self.streamKind(of: pad), let queue = outlets[stream],
                  let sink = queue.staticPad("sink"), !sink.isLinked else {
                // A stream nobody wants: parsed (see the caps above), never decoded, dropped here.
                pad.discardData()
                return
            }
            try? pad.link(sink)
        }
    }

    /// Discovers the streams before the graph is built, on a thread of its own (it may wait
    /// up to 15 s for the media to preroll), so that `streams()` has the answer at once.
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {
        try refuseUnresolvedCredential()
        if let srt {
            guard srtStreams == nil else { return }
            switch await srt.readHead(timeout: Self.discoveryTimeout) {
            case .success(let head):
                srtStreams = Dictionary(uniqueKeysWithValues: head.streams.map { kind, codec in
                    (StreamKind(kind), codec.flatMap(Codec.init(rawValue:)))
                })
            case .failure(let failure):
                throw BuildError("cannot open \(uri): \(failure.reason) (is the peer sending, with the same passphrase?)", at: keyPath)
            }
            return
        }
        guard discovered == nil else { return }
        do {
            discovered = try await MediaDiscoverer.discover(uri: uri, timeout: Self.discoveryTimeout)
        } catch {
            throw discoveryFailed(error)
        }
    }

    /// For kinds built on this one: the decoder, before anything is linked to it.
    func decoderMade(_ decoder: Element) {}

    /// For kinds built on this one: the pad each wanted stream leaves the bin through.
    func outletMade(_ pad: Pad, stream: StreamKind) {}

    /// An end-of-stream sent to the pipeline reaches filesrc, which cannot push it
    /// while a demuxer pulls from it; so every stream is ended at the bin's outlet.
    public var endsStreamsOnStop: Bool { true }

    /// An SRT caller of the same URI (passphrase and all) plays from the running source's
    /// connection: the listener may take a single caller.
    public func share(_ running: any SourceComponent) {
        guard let running = running as? URISource, type(of: running) == type(of: self), srt != nil,
              running.uri == uri, let connection = running.srt, !connection.isStopped,
              let streams = running.srtStreams else { return }
        (srt, srtStreams, sharing) = (connection, streams, (running, nil))
    }

    public func takeOver() {
        guard let (running, feed) = sharing, let srt, let feed else { return }
        srt.handOver(to: feed, endAfter: srtEndAfter)
        running.srt = nil
        sharing = nil
    }

    public func willStop() {
        // A connection not taken over yet is still the running source's.
        if sharing == nil { srt?.end() }
        // A loop's decoder that is starting is let start first (see FileLoop.stop).
        guard let fileLoop else { ends.stop(); return }
        fileLoop.stop { [ends] idle in ends.stop(idle: idle) }
    }

    nonisolated(nonsending) public func finish() async {
        if sharing == nil { await srt?.stop() }
    }

    /// Caps at which uridecodebin3 stops decoding a stream wanted in `form`.
    static func stopCaps(_ stream: StreamKind, _ form: StreamForm) -> String {
        guard case .encoded(let known) = form else { return "\(stream)/x-raw(ANY)" }
        guard let codec = known else {
            // Any codec of this kind, still encoded.
            return Codec.allCases.filter { $0.stream == stream }.map { stopCaps(stream, .encoded($0)) }.joined(separator: "; ")
        }
        return codec.mediaType
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
        OptionSchema(path, loop, shorthand: "path")
    }

    public static let path = ConfigOption<String?>("path", required: true, help: "path to the media file")
    public static let loop = ConfigOption<Bool>("loop", default: false, help: "play it again and again, timestamps running on")

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        let path = spec.options[Self.path] ?? ""
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw BuildError("no such file \"\(path)\" (check the path)", at: "\(spec.keyPath).path")
        }
        super.init(uri: URL(fileURLWithPath: path).absoluteString, keyPath: spec.keyPath,
                   loop: spec.options[Self.loop], events: context.events)
    }
}

/// The decoder that runs in a source's bin and where its streams go, so that it
/// can be swapped for a fresh one mid-run (a restart, a loop's next pass).
final class DecoderSlot: Sendable {
    struct Running: Sendable {
        var bin: Bin
        var decoder: Element
        var stops: Caps
        var outlets: [StreamKind: Element]
    }
    private let running = Mutex<Running?>(nil)
    /// The decoder the last swap retired, held until the next one. Its last reference let go
    /// at once disposed uridecodebin3 while its typefind thread was still emitting have-type,
    /// and the two waited on each other's locks for ever (seen twice looping a file, 1.22).
    private let lastRetired = Mutex<Element?>(nil)

    func start(_ first: Running) {
        running.withLock { $0 = first }
    }

    /// Retires the running decoder and links one from `make` to the same outlets.
    /// `unlinkFirst`: the old decoder has ended every stream, so it is unlinked before it
    /// shuts down, and nothing it does on the way reaches the outlets; a failed decoder
    /// (a restart) may still be pushing, and an unlinked pad would be one more error.
    /// `retired` runs between the two. Called one at a time, off the streaming threads (the
    /// loop's own queue); no lock is held while states change.
    func replace(unlinkFirst: Bool, retired: (Bin) -> Void = { _ in },
                 make: (Caps) throws -> Element) throws {
        guard let current = running.withLock({ $0 }) else { return }
        if unlinkFirst {
            for pad in current.decoder.srcPads { if let peer = pad.peer { pad.unlink(peer) } }
        }
        // The pipeline plays on meanwhile (a paused sink would hold the old decoder's
        // threads, and its shutdown needs them). Locked first: a bin still on its way to
        // PLAYING would otherwise take the old decoder back up with it, and it would play on
        // outside the pipeline until disposed (GStreamer-CRITICAL, 3 runs of 8).
        current.decoder.setLockedState(true)
        _ = current.decoder.setState(.null)
        try? current.bin.remove(current.decoder)
        // The one retired a swap ago, long idle, goes now; this one waits for the next swap.
        let longIdle = lastRetired.withLock { held in defer { held = current.decoder }; return held }
        _ = longIdle
        retired(current.bin)
        let decoder = try make(current.stops)
        try current.bin.add(decoder)
        URISource.link(decoder, to: current.outlets)
        running.withLock { $0?.decoder = decoder }
        _ = decoder.syncStateWithParent()
    }
}
