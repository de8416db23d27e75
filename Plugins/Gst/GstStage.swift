import CastlineKit
import Synchronization

/// Any GStreamer element or bin description as a stage, e.g.
/// `- gst: "audioecho delay=500000000 intensity=0.3"`. Which stream it works on,
/// and in which form, is read from the description's own pads.
public final class GstStage: Stage {
    public static let kind = "gst"
    public static let summary = "any GStreamer element or bin description, e.g. \"audioecho delay=500000000 intensity=0.3\""
    public static let description = ConfigOption<String?>("description", required: true, help: "gst-launch syntax with one input and one output")
    public static let stream = ConfigOption<String>("stream", .choice(["auto", "audio", "video"]), default: "auto",
                                             help: "the stream it works on; auto reads it from the element's caps")
    public static let schema = OptionSchema(description, stream, shorthand: "description")

    let description: String
    let stream: StreamKind?
    let takes: FormRequirement
    let gives: StreamForm?
    /// The bin parsed to check the description, used for the first build: it is parsed once per plan.
    private let checked: Mutex<Bin?>

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let keyPath = "\(spec.keyPath).description"
        description = spec.options[Self.description] ?? ""
        let probe: Bin
        do {
            probe = try Gst.parseBin(description)
        } catch {
            throw BuildError("\(error) (check it with gst-inspect-1.0, or `castline doctor`)", at: keyPath)
        }
        guard let sink = probe.staticPad("sink"), let src = probe.staticPad("src") else {
            throw BuildError("\"\(description)\" needs one free input and one free output pad (a filter, not a source or sink)", at: keyPath)
        }
        let inCaps = sink.queryCaps()
        let outCaps = src.queryCaps()
        let choice = spec.options[Self.stream]
        if choice == "auto" {
            guard let type = inCaps?.mediaType, !(inCaps?.isAny ?? true),
                  let kind = StreamKind.allCases.first(where: { type.hasPrefix($0.rawValue) }) else {
                throw BuildError("\"\(description)\" takes any media; say which stream (stream: audio or stream: video)",
                                 at: "\(spec.keyPath).stream")
            }
            stream = kind
        } else {
            stream = StreamKind(rawValue: choice)
        }
        takes = Self.form(of: inCaps).map(Self.requirement) ?? .any
        gives = Self.form(of: outCaps)
        checked = Mutex(probe)
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        stream == self.stream ? .process(takes: takes) : .passThrough
    }

    public func output(for stream: StreamKind, input: StreamForm) -> StreamForm {
        gives ?? input
    }

    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let inner = try checked.withLock { $0.take() } ?? Gst.parseBin(description)
        return try BinChain.make(name, [inner])
    }

    /// Raw when the caps are x-raw, encoded when they name a codec, nil when they say nothing.
    static func form(of caps: Caps?) -> StreamForm? {
        guard let caps, !caps.isAny, let type = caps.mediaType else { return nil }
        if type.hasSuffix("/x-raw") { return .raw }
        let structure = caps.structure(at: 0)
        return .encoded(Codec(mediaType: type, mpegVersion: structure?.int("mpegversion")))
    }

    static func requirement(_ form: StreamForm) -> FormRequirement {
        switch form {
        case .raw: .raw
        case .encoded(let codec?): .encoded([codec])
        case .encoded(nil): .encoded([])
        }
    }
}
