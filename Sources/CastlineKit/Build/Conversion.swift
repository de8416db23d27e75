import GstKit

/// The bins the builder inserts where forms differ, so a user never writes
/// `audioconvert ! audioresample` or picks a decoder.
enum Conversion {
    /// A bin that turns `form` into something `requirement` accepts, and the
    /// form that comes out. No bin when raw goes to raw of the same kind and
    /// nothing is needed, or the form is already accepted.
    static func make(
        _ stream: StreamKind, from form: StreamForm, to requirement: FormRequirement, name: String, h264Profile: String? = nil
    ) throws -> (bin: Bin?, output: StreamForm) {
        switch (form, requirement) {
        case (.raw, .raw), (.raw, .any):
            // Converters are passthrough when formats already match, and cheap.
            return (try rawConverter(stream, name: name), .raw)
        case (.encoded(let codec), _) where requirement.accepts(form):
            // A parser puts the stream in the framing the consumer asks for (e.g. avc for FLV).
            guard let codec, let parser = parserFactories[codec] else { return (nil, form) }
            return (try BinChain.make(name, factories: [parser]), form)
        case (.raw, .encoded(let codecs)):
            let codec = codecs.first ?? defaultCodec(stream)
            return (try encoder(stream, codec: codec, name: name, h264Profile: h264Profile), .encoded(codec))
        case (.encoded(let codec), .raw), (.encoded(let codec), .any):
            return (try decoder(stream, codec: codec, name: name), .raw)
        case (.encoded(let codec), .encoded(let codecs)):
            let target = codecs.first ?? defaultCodec(stream)
            let decode = try decoder(stream, codec: codec, name: "\(name)-decode")
            let encode = try encoder(stream, codec: target, name: "\(name)-encode", h264Profile: h264Profile)
            return (try BinChain.make(name, [decode, encode]), .encoded(target))
        }
    }

    static func defaultCodec(_ stream: StreamKind) -> Codec {
        stream == .video ? .h264 : .aac
    }

    static func rawConverter(_ stream: StreamKind, name: String) throws -> Bin {
        switch stream {
        case .audio: try BinChain.make(name, factories: ["audioconvert", "audioresample"])
        case .video: try BinChain.make(name, factories: ["videoconvert", "videoscale"])
        }
    }

    static func encoder(_ stream: StreamKind, codec: Codec, name: String, h264Profile: String? = nil) throws -> Bin {
        switch stream {
        case .video:
            var settings = VideoEncoding()
            settings.codec = codec
            if let h264Profile { settings.profile = h264Profile }
            return try Encoders.videoBin(settings, name: name)
        case .audio:
            var settings = AudioEncoding()
            settings.codec = codec
            return try Encoders.audioBin(settings, name: name)
        }
    }

    /// Parser and decoder for a known codec, then a raw converter.
    static func decoder(_ stream: StreamKind, codec: Codec?, name: String) throws -> Bin {
        let converter = stream == .video ? ["videoconvert"] : ["audioconvert", "audioresample"]
        guard let codec else { return try anyDecoder(name, converter: converter) }
        guard let factories = decoderFactories[codec] else {
            throw BuildError("cannot decode \(codec.rawValue) \(stream) (give the stream a known codec)")
        }
        return try BinChain.make(name, factories: factories + converter)
    }

    /// For a codec known only once media flows (a WebRTC answer picks one): decodebin finds the
    /// decoder then, and links it to the converter.
    private static func anyDecoder(_ name: String, converter: [String]) throws -> Bin {
        let decoder = try ElementCatalog.make("decodebin")
        let converters = try BinChain.make("\(name)-convert", factories: converter)
        let bin = Bin(name: name)
        try bin.add(decoder, converters)
        try bin.ghost(decoder.staticPad("sink"), as: "sink")
        try bin.ghost(converters.staticPad("src"), as: "src")
        decoder.onPadAdded { pad in
            guard let sink = converters.staticPad("sink"), !sink.isLinked else { return pad.discardData() }
            try? pad.link(sink)
        }
        return bin
    }

    static let parserFactories: [Codec: String] = [
        .h264: "h264parse", .h265: "h265parse", .aac: "aacparse", .mp3: "mpegaudioparse",
        .opus: "opusparse", .vorbis: "vorbisparse", .flac: "flacparse",
    ]

    /// AAC is decoded by avdec_aac (libavcodec) where it is installed, faad elsewhere:
    /// faad holds one frame back, so it loses the last frame before every EOS or flush
    /// (a gap at each pass of a looped file) and its PCM runs one frame ahead of its stamps.
    static let aacDecoder: String = Gst.hasElement("avdec_aac") ? "avdec_aac" : "faad"

    /// The AAC decoder for audio-only listening, chosen per pipeline (never by changing
    /// GStreamer's ranks, which every pipeline in the process shares): faad where installed.
    /// avdec_aac loads gst-libav, libavcodec and ~170 libraries, 56 ms of CPU at start (more
    /// than a whole `gst-launch-1.0` with faad); faad's one-frame hold-back (above) costs a
    /// listener only the last 21 ms before the end.
    static let lightAACDecoder: String? = Gst.hasElement("faad") ? "faad" : nil

    static let decoderFactories: [Codec: [String]] = [
        .h264: ["h264parse", "avdec_h264"],
        .h265: ["h265parse", "avdec_h265"],
        .vp8: ["vp8dec"],
        .vp9: ["vp9dec"],
        .aac: ["aacparse", aacDecoder],
        .opus: ["opusparse", "opusdec"],
        .mp3: ["mpegaudioparse", "mpg123audiodec"],
        .vorbis: ["vorbisparse", "vorbisdec"],
        .flac: ["flacparse", "flacdec"],
    ]
}
