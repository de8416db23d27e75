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
}
