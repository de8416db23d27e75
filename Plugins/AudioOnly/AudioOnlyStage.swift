import CastlineKit

/// Keeps audio and drops video before anything decodes it: the builder then
/// never builds the video branch, and an HLS source picks an audio-only
/// rendition when the playlist offers one.
public final class AudioOnlyStage: Stage {
    public static let kind = "audio-only"
    public static let summary = "drop video (it is then not decoded at all, nor downloaded where an audio-only rendition exists)"
    public static let schema = OptionSchema([])

    public init(spec: ComponentSpec, context: ComponentContext) throws {}

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        stream == .video ? .drop : .passThrough
    }

    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        throw BuildError("internal: audio-only builds nothing")
    }
}
