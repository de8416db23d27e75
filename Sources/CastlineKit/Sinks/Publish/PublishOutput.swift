import GstKit

/// Where a `StreamPublisher` sends: the muxer and network sink at the end of its own
/// pipeline, and how to read their counters and failures. RTMP is flvmux into
/// rtmp2sink (`RTMPOutput`), SRT mpegtsmux into srtsink (`SRTOutput`).
protocol PublishOutput: Sendable {
    /// `rtmp`, `srt`: how messages name the publish.
    var scheme: String { get }
    /// Where it publishes, no secret in it.
    var displayURL: String { get }
    /// The muxer and the network sink, not yet linked. A `picture` (for `graph --gst`) carries
    /// no secret: the real address, key and passphrase are read only for a real publish.
    func makeElements(picture: Bool) throws -> (muxer: Element, output: Element)
    /// The muxer's request pad for a stream.
    func muxerPad(for stream: StreamKind) -> String
    /// Bytes the output has sent, and those the far end acknowledged (nil: it does not say).
    func counters(_ output: Element?) -> (sent: UInt64, acked: UInt64?)
    /// A failure no retry mends (a refused key or passphrase), in the user's words; nil otherwise.
    func refusal(in reason: String) -> String?
    /// Why a first connection failed, in the user's words.
    func neverConnected(reason: String) -> String
    /// Up only once bytes went out: its connection can fail without an error on the bus.
    var confirmsBySending: Bool { get }
}
