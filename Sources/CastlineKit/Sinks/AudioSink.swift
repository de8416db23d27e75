import GstKit
import PipelineConfig

/// The default audio device (or a named ALSA device). Video is not taken.
public final class AudioSink: SinkComponent {
    public static let kind = "audio"
    public static let summary = "play audio on the default device (video is not taken)"
    public static let schema = OptionSchema([
        OptionField("device", .string, help: "ALSA device, e.g. hw:0 or default; omit for the system default output"),
    ])

    let device: String?

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        device = spec.options.string("device")
    }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .audio ? .raw : nil
    }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        let output: Element
        if let device {
            output = try ElementCatalog.make("alsasink")
            try output.set("device", text: device)
        } else {
            output = try ElementCatalog.make("autoaudiosink")
        }
        return try BinChain.make(name, [try ElementCatalog.make("audioconvert"),
                                        try ElementCatalog.make("audioresample"), output],
                                 sinkPad: StreamKind.audio.rawValue)
    }
}
