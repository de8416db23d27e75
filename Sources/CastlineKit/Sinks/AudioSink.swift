import GstKit
import PipelineConfig

/// The default audio device (or a named ALSA device). Video is not taken.
public final class AudioSink: SinkComponent {
    public static let kind = "audio"
    public static let summary = "play audio on the default device (video is not taken)"
    public static let device = ConfigOption<String?>("device", help: "ALSA device, e.g. hw:0 or default; omit for the system default output")
    public static let required = ConfigOption<Bool>("required", default: true,
        help: "no sound device is an error; false: a warning, and the sound is dropped (a window plays the picture alone)")
    public static let schema = OptionSchema(device, required)

    let device: String?
    let required: Bool
    private let context: ComponentContext

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        device = spec.options[Self.device]
        required = spec.options[Self.required]
        self.context = context
    }

    public var rendersAtTheClock: Bool { true }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .audio ? .raw : nil
    }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        try BinChain.make(name, [try ElementCatalog.make("audioconvert"), try ElementCatalog.make("audioresample"),
                                 try Self.output(device: device)],
                          sinkPad: StreamKind.audio.rawValue)
    }

    private static func output(device: String?) throws -> Element {
        guard let device else { return try ElementCatalog.make("autoaudiosink") }
        let output = try ElementCatalog.make("alsasink")
        try output.set("device", text: device)
        return output
    }

    /// Opens an output once before the run (READY opens the device, then NULL): with no sound
    /// device, autoaudiosink settles for a fakesink and the run played to nothing with exit 0.
    nonisolated(nonsending) public func preflight() async throws {
        guard let problem = try Self.outputProblem(device: device) else { return }
        // Only the default output settles for dropping the sound; a named device that will not open fails the run.
        guard required || device != nil else {
            // autoaudiosink has settled for a fakesink, or the device will not open: what comes is dropped.
            context.events.emit(.warning("\(problem.prefix { $0 != "(" }.trimmingCharacters(in: .whitespaces)): playing without sound"))
            return
        }
        throw BuildError(problem, badInput: true)
    }

    /// Why the default output (or ALSA `device`) cannot be opened, or nil when it can (`doctor` asks too).
    public static func outputProblem(device: String? = nil) throws -> String? {
        let output = try output(device: device)
        defer { _ = output.setState(.null) }
        let opened = output.setState(.ready) != .failure
        if let device {
            return opened ? nil : "cannot open the ALSA device \"\(device)\" (list them with aplay -L; to play without sound, "
                + "use --output null or a null: {} sink)"
        }
        guard opened, (output as? Bin)?.children.first?.factoryName != "fakesink" else {
            return "no sound device: neither PulseAudio nor ALSA has an output here "
                + "(start PulseAudio or plug one in; to play without sound, use --output null or a null: {} sink)"
        }
        return nil
    }
}
