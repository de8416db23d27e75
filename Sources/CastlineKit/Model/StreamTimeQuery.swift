import GstKit

/// Where a stream is, in its own time: asked upstream by a part that reports a position
/// (for a running time: what is heard now), answered by the part that knows how the stream's
/// own timestamps map to running time here. A source that re-stamps the stream (HLS: its
/// MPEG-TS PTS) answers with the stream's own; a stage that re-times what passes (a time-shift)
/// answers for its output from what came in. Nobody answering: the asker's own segment
/// says (GStreamer's stream time). So two processes reading one stream report positions that
/// compare, with or without a time-shift.
public enum StreamTimeQuery {
    public static let name = "castline/stream-time"

    /// What is asked: of one stream, the media at running time `runningTime`, which is at
    /// `segmentTime` where the question was asked (GStreamer's stream time in the asker's
    /// segment: an encoder between moves the timestamps, with their segment, and not this).
    public struct Question: Sendable, Equatable {
        public var stream: StreamKind
        public var runningTime: UInt64
        public var segmentTime: UInt64
        /// How far what renders lies behind the clock (the pipeline's latency, ns): `runningTime`
        /// has it taken off already, and is held at the last buffer's end while nothing comes.
        public var latency: UInt64

        public init(stream: StreamKind, runningTime: UInt64, segmentTime: UInt64, latency: UInt64 = 0) {
            self.stream = stream
            self.runningTime = runningTime
            self.segmentTime = segmentTime
            self.latency = latency
        }
    }

    /// The stream time, in ns, of `question`, asked through `pad` (a sink pad: the question goes to
    /// its peer and upstream); nil when nothing upstream knows.
    public static func ask(through pad: Pad, _ question: Question) -> UInt64? {
        guard let structure = try? Structure("\(name), stream=(string)\(question.stream.rawValue), "
            + "running-time=(guint64)\(question.runningTime), segment-time=(guint64)\(question.segmentTime), latency=(guint64)\(question.latency)")
        else { return nil }
        let query = CustomQuery(structure)
        guard pad.peerQuery(query) else { return nil }
        return query.structure?.uint64("stream-time")
    }

    /// Answers the question where it reaches `pad` (a src pad) from downstream: `answer` gives the
    /// stream time, or nil to let the question go on upstream.
    public static func answer(at pad: Pad, _ answer: @escaping @Sendable (Question) -> UInt64?) {
        pad.addProbe([.queryUpstream, .push]) { info in
            guard let query = info.query, query.customName == name, let structure = query.structure,
                  let stream = structure.string("stream").flatMap(StreamKind.init(rawValue:)),
                  let running = structure.uint64("running-time"), let segmentTime = structure.uint64("segment-time"),
                  let time = answer(Question(stream: stream, runningTime: running, segmentTime: segmentTime,
                                             latency: structure.uint64("latency") ?? 0))
            else { return .ok }
            query.set("stream-time", time)
            return .handled
        }
    }
}
