import GstKit
import Synchronization

/// Watches what reaches a recording's muxer: whether any media was written, and a change of a
/// stream's format after it was. Matroska, MP4 and WAV write the format once, in their header:
/// on such a change (a swap's new encoder, an HLS discontinuity to another size) their muxer
/// would fail the whole run and leave the file unfinished. Instead the recording ends there:
/// each input gets its end-of-stream (from its own thread, so no input waits on another's lock),
/// the file is finished playable up to the change, and what comes after is dropped, so nothing
/// upstream waits on it.
final class RecordingFormatGuard: Sendable {
    private let wrote = OnceFlag()
    private let ended = OnceFlag()
    /// The picture waits for a keyframe, having dropped what came before it: sound is dropped
    /// meanwhile too, so nothing piles up in front of a muxer that waits for every input.
    private let pictureWaits = Mutex(false)
    private let endsOnFormatChange: Bool
    private let warn: @Sendable (StreamKind) -> Void

    /// `warn`: said once, naming the stream whose format changed.
    init(endsOnFormatChange: Bool, warn: @escaping @Sendable (StreamKind) -> Void) {
        self.endsOnFormatChange = endsOnFormatChange
        self.warn = warn
    }

    /// Watches `entry`, the recording bin's input for `stream`, which feeds the muxer's `muxerPad`.
    /// What is dropped is dropped there, upstream of the muxer: a pad at its end-of-stream answers
    /// EOS to what still comes, and a tee in front takes an EOS from one branch as the end of all.
    func install(on entry: Pad, muxerPad: Pad, stream: StreamKind) {
        let closed = OnceFlag()
        // This input's own: a muxer takes a format update until its stream has media.
        let started = OnceFlag()
        let askedForKeyframe = OnceFlag()
        // The entry is read from the probe's info, not captured: a pad holding its own probe would never be freed.
        entry.addProbe([.buffer, .bufferList, .eventDownstream]) { [self] info in
            if let event = info.event {
                if endsOnFormatChange, event.kind == .caps, started.isTripped, let new = event.caps,
                   let old = info.pad?.currentCaps, new != old, ended.trip() {
                    warn(stream)
                }
                // An end-of-stream always goes in: this one's own, or the run's.
                guard ended.isTripped, event.kind != .eos else { return .ok }
            } else if !ended.isTripped {
                // The picture starts on a keyframe (a sink added mid-run joins mid-group): frames
                // that depend on an earlier one could not be decoded. An encoder upstream is asked for one.
                if !started.isTripped, stream == .video {
                    let isDelta = info.buffer?.isDelta == true
                    pictureWaits.withLock { $0 = isDelta }
                    if isDelta {
                        if askedForKeyframe.trip() { _ = info.pad?.pushEvent(.upstreamForceKeyUnit()) }
                        return .drop
                    }
                } else if stream != .video, pictureWaits.withLock({ $0 }) {
                    return .drop
                }
                wrote.trip()
                started.trip()
                return .ok
            }
            if closed.trip() { _ = muxerPad.sendEvent(.endOfStream()) }
            return .drop
        }
    }

    /// Whether any media reached the muxer.
    var wroteMedia: Bool { wrote.isTripped }
    /// Whether a change of format ended the recording before the run did.
    var endedAtFormatChange: Bool { ended.isTripped }
}
