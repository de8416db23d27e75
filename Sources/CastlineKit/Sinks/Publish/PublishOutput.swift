import GstKit

/// Where a `StreamPublisher` sends: the elements at the end of its own pipeline, and how to
/// read their counters and failures. RTMP is FLV tags into rtmp2sink (`RTMPOutput`), SRT
/// mpegtsmux into srtsink (`SRTOutput`), WHIP payloaders into webrtcbin (`WHIPOutput`).
protocol PublishOutput: Sendable {
    /// `rtmp`, `srt`, `whip`: how messages name the publish.
    var scheme: String { get }
    /// Where it publishes, no secret in it.
    var displayURL: String { get }
    /// What the output has sent and what the far end has confirmed of it, on this connection.
    func counters(_ output: Element?) -> PublishCounters
    /// The far end has taken the stream, as the output itself reports it (rtmp2sink once the
    /// server answered the publish, an SRT caller once its connection is up, a listener while a
    /// caller is connected): what "published" is measured from.
    func isConnected(_ output: Element?) -> Bool
    /// A listener: the far end calls it, so having nobody yet is waiting, not a failure to connect.
    var waitsForCallers: Bool { get }
    /// A failure no retry mends (a refused key or passphrase), in the user's words; nil otherwise.
    func refusal(in reason: String) -> String?
    /// Why a first connection failed, in the user's words: `reason` from the output's error, or
    /// nil when nothing answered at all within `waited`.
    func neverConnected(reason: String?, waited: Duration) -> String
    /// Builds the output's end of a publishing pipeline in `pipeline`: where the streams go in
    /// (a pad per stream, or one of FLV tags), and the element `counters` and `isConnected` read. A `picture` (for
    /// `graph --gst`) carries no secret. `requestKeyframe` asks the encoder for one (a WebRTC
    /// receiver's PLI or FIR).
    func build(in pipeline: Pipeline, streams: [StreamKind], picture: Bool,
               requestKeyframe: @escaping @Sendable () -> Void) throws -> (inputs: PublishInputs, output: Element)
    /// When the far end was last heard to take the stream, where the output knows it (the time
    /// since is not published time); nil: now.
    func lastHeard(_ output: Element) -> ContinuousClock.Instant?
    /// What it wrote and the far end acknowledged, where that is how a far end that stopped
    /// reading shows (RTMP over TCP); nil where the protocol notices by itself (SRT, WebRTC).
    func progress(_ output: Element) -> WriteProgress?
    /// What the connection itself says of its link (round-trip time, loss), as stats figures.
    func linkFigures(_ output: Element) async -> [String: Double]
    /// A publishing pipeline of this output has stopped (at the end, or failed): what the far
    /// end keeps for it can go. Called off the cooperative pool and the streaming threads.
    func closed(_ output: Element)
}

extension PublishOutput {
    func closed(_ output: Element) {}
    func linkFigures(_ output: Element) async -> [String: Double] { [:] }
    func lastHeard(_ output: Element) -> ContinuousClock.Instant? { nil }
    func progress(_ output: Element) -> WriteProgress? { nil }
}

/// An output that is a muxer into a network sink (SRT's): its `build` links them.
protocol MuxedOutput: PublishOutput {
    /// The muxer and the network sink, not yet linked. A `picture` carries no secret: the real
    /// address, key and passphrase are read only for a real publish.
    func makeElements(picture: Bool) throws -> (muxer: Element, output: Element)
    /// The muxer's request pad for a stream.
    func muxerPad(for stream: StreamKind) -> String
}

extension MuxedOutput {
    func build(in pipeline: Pipeline, streams: [StreamKind], picture: Bool,
               requestKeyframe: @escaping @Sendable () -> Void) throws -> (inputs: PublishInputs, output: Element) {
        let (muxer, output) = try makeElements(picture: picture)
        try pipeline.add(muxer, output)
        try muxer.link(output)
        var inputs: [StreamKind: Pad] = [:]
        for stream in streams {
            guard let pad = muxer.requestPad(muxerPad(for: stream)) else {
                throw BuildError("\(muxer.factoryName ?? "the muxer") gave no \(stream) pad")
            }
            inputs[stream] = pad
        }
        return (.streams(inputs), output)
    }
}

/// What a publish has sent, and what its far end confirmed taking: an RTMP server acknowledges
/// bytes (nginx-rtmp in 5 MB windows), an SRT receiver sends ACK packets (every 10 ms while
/// data arrives), and says nothing of bytes. Each field is nil where the protocol has no such thing.
struct PublishCounters: Sendable, Equatable {
    var sent: UInt64 = 0
    var ackedBytes: UInt64?
    /// ACK packets received: SRT's receiver's word that data is reaching it.
    var acks: UInt64?

    /// Over two connections, the earlier's then this one's.
    static func + (a: Self, b: Self) -> Self {
        Self(sent: a.sent + b.sent, ackedBytes: sum(a.ackedBytes, b.ackedBytes), acks: sum(a.acks, b.acks))
    }

    /// How far each of these counters is below `earlier`'s (zero where it is not).
    func shortfall(below earlier: Self) -> Self {
        func gap(_ now: UInt64?, _ before: UInt64?) -> UInt64? {
            guard let before else { return now.map { _ in 0 } }
            return before - min(before, now ?? 0)
        }
        return Self(sent: earlier.sent - min(earlier.sent, sent), ackedBytes: gap(ackedBytes, earlier.ackedBytes), acks: gap(acks, earlier.acks))
    }

    private static func sum(_ a: UInt64?, _ b: UInt64?) -> UInt64? {
        guard a != nil || b != nil else { return nil }
        return (a ?? 0) + (b ?? 0)
    }

    /// "1.20 MB sent, 1.05 MB acknowledged" as far as the far end has said (none yet is not "nothing taken").
    var text: String {
        var text = String(format: "%.2f MB sent", Double(sent) / 1_000_000)
        if let ackedBytes, ackedBytes > 0 { text += String(format: ", %.2f MB acknowledged", Double(ackedBytes) / 1_000_000) }
        if let acks { text += ", \(acks) ACKs received" }
        return text
    }

    /// As stats figures (`StatsFigure`), only those the protocol has.
    var figures: [String: Double] {
        var figures = [StatsFigure.sentBytes: Double(sent)]
        if let ackedBytes { figures[StatsFigure.ackedBytes] = Double(ackedBytes) }
        if let acks { figures[StatsFigure.acksReceived] = Double(acks) }
        return figures
    }
}
