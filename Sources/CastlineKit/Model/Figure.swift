/// A number a component reports in its samples, declared by the component: its name (the
/// unit in it), what a person calls it, and what it means, so that the status line, the
/// summary and the plot find it by meaning, never by the name of the stage that reports it.
public struct Figure: Sendable, Hashable {
    public enum Meaning: Sendable, Hashable {
        /// Seconds behind live, as a stage or a source knows it: drawn with the others like it.
        case behindLive
        /// Seconds from the test signal's clock, read in this stream, to the wall clock at the output.
        case measuredLatency(StreamKind)
        /// Sound minus picture, in milliseconds.
        case avOffset
        /// Silences heard on a stream so far (a count).
        case silences
        /// A stream's sound level, RMS in dBFS.
        case level
        /// A video stream's frames per second.
        case frameRate
        /// Bytes of a stream that passed so far.
        case bytes
        /// Short-term loudness (EBU R128, 3 s), LUFS.
        case loudness
        /// Alarms raised on a stream now.
        case alarmsActive
        /// A figure nothing reads by its meaning (it is shown and exported as it is).
        case other
    }

    public let name: String
    public let label: String
    public let meaning: Meaning

    public init(_ name: String, label: String, meaning: Meaning) {
        self.name = name
        self.label = label
        self.meaning = meaning
    }
}

extension Collection<Figure> {
    /// The figure declared with this meaning, if one is.
    public func first(meaning: Figure.Meaning) -> Figure? {
        first { $0.meaning == meaning }
    }
}
