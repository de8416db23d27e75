import GstKit

/// The GStreamer elements castline builds with, and the Debian package that
/// provides each: one table for `castline doctor` and for missing-element errors.
public enum ElementCatalog {
    public struct Entry: Sendable {
        public let element: String
        public let package: String
        public let purpose: String
    }

    public static let entries: [Entry] = [
        Entry(element: "audiotestsrc", package: "gstreamer1.0-plugins-base", purpose: "test source: tone"),
        Entry(element: "videotestsrc", package: "gstreamer1.0-plugins-base", purpose: "test source: pattern"),
        Entry(element: "textoverlay", package: "gstreamer1.0-plugins-base", purpose: "test source: burnt-in time"),
        Entry(element: "audioconvert", package: "gstreamer1.0-plugins-base", purpose: "raw audio conversion"),
        Entry(element: "audioresample", package: "gstreamer1.0-plugins-base", purpose: "raw audio conversion"),
        Entry(element: "videoconvert", package: "gstreamer1.0-plugins-base", purpose: "raw video conversion"),
        Entry(element: "videoscale", package: "gstreamer1.0-plugins-base", purpose: "raw video conversion"),
        Entry(element: "uridecodebin3", package: "gstreamer1.0-plugins-base", purpose: "file and uri sources"),
        Entry(element: "decodebin", package: "gstreamer1.0-plugins-base", purpose: "decoding encoded streams"),
        Entry(element: "tee", package: "libgstreamer1.0-0", purpose: "several sinks"),
        Entry(element: "queue", package: "libgstreamer1.0-0", purpose: "thread boundaries"),
        Entry(element: "fakesink", package: "libgstreamer1.0-0", purpose: "null sink"),
        Entry(element: "filesink", package: "libgstreamer1.0-0", purpose: "file sink"),
        Entry(element: "clocksync", package: "libgstreamer1.0-0", purpose: "recording at the pace of the clock"),
        Entry(element: "x264enc", package: "gstreamer1.0-plugins-ugly", purpose: "H.264 encoding"),
        Entry(element: "h264parse", package: "gstreamer1.0-plugins-bad", purpose: "H.264 parsing"),
        Entry(element: "voaacenc", package: "gstreamer1.0-plugins-bad", purpose: "AAC encoding"),
        Entry(element: "aacparse", package: "gstreamer1.0-plugins-good", purpose: "AAC parsing"),
        Entry(element: "opusenc", package: "gstreamer1.0-plugins-base", purpose: "Opus encoding"),
        Entry(element: "avdec_h264", package: "gstreamer1.0-libav", purpose: "H.264 decoding"),
        Entry(element: "avdec_aac", package: "gstreamer1.0-libav", purpose: "AAC decoding"),
        Entry(element: "faad", package: "gstreamer1.0-plugins-bad", purpose: "AAC decoding when listening audio-only"),
        Entry(element: "wavenc", package: "gstreamer1.0-plugins-good", purpose: "WAV files"),
        Entry(element: "matroskamux", package: "gstreamer1.0-plugins-good", purpose: "Matroska files"),
        Entry(element: "mp4mux", package: "gstreamer1.0-plugins-good", purpose: "MP4 files"),
        Entry(element: "mpegtsmux", package: "gstreamer1.0-plugins-bad", purpose: "MPEG-TS files and SRT publishing"),
        Entry(element: "srtsink", package: "gstreamer1.0-plugins-bad", purpose: "SRT publishing"),
        Entry(element: "rtmp2sink", package: "gstreamer1.0-plugins-bad", purpose: "RTMP publishing"),
        Entry(element: "tsdemux", package: "gstreamer1.0-plugins-bad", purpose: "HLS listening (MPEG-TS segments)"),
        Entry(element: "qtdemux", package: "gstreamer1.0-plugins-good", purpose: "HLS listening (fMP4 segments), MP4 files"),
        Entry(element: "souphttpsrc", package: "gstreamer1.0-plugins-good", purpose: "HTTP(S) fetching"),
        Entry(element: "level", package: "gstreamer1.0-plugins-good", purpose: "audio levels"),
        Entry(element: "autoaudiosink", package: "gstreamer1.0-plugins-good", purpose: "audio device sink"),
        Entry(element: "alsasink", package: "gstreamer1.0-alsa", purpose: "audio device sink (ALSA)"),
        Entry(element: "ximagesink", package: "gstreamer1.0-x", purpose: "video window (X11)"),
        Entry(element: "pulsesrc", package: "gstreamer1.0-pulseaudio", purpose: "capture: PulseAudio microphone"),
        Entry(element: "alsasrc", package: "gstreamer1.0-alsa", purpose: "capture: ALSA microphone"),
        Entry(element: "v4l2src", package: "gstreamer1.0-plugins-good", purpose: "capture: V4L2 camera"),
        Entry(element: "videorate", package: "gstreamer1.0-plugins-base", purpose: "capture: a steady frame rate"),
        Entry(element: "rtmp2src", package: "gstreamer1.0-plugins-bad", purpose: "listening to RTMP"),
        Entry(element: "srtsrc", package: "gstreamer1.0-plugins-bad", purpose: "listening to SRT"),
        Entry(element: "webrtcbin", package: "gstreamer1.0-plugins-bad", purpose: "WebRTC (WHIP publishing)"),
        Entry(element: "nicesrc", package: "gstreamer1.0-nice", purpose: "WebRTC's ICE connections"),
        Entry(element: "dtlssrtpdec", package: "gstreamer1.0-plugins-bad", purpose: "WebRTC's DTLS and SRTP"),
        Entry(element: "rtph264pay", package: "gstreamer1.0-plugins-good", purpose: "WebRTC: H.264 over RTP"),
        Entry(element: "rtpopuspay", package: "gstreamer1.0-plugins-good", purpose: "WebRTC: Opus over RTP"),
    ]

    /// The Debian package for an element castline knows, or nil.
    public static func package(for element: String) -> String? {
        entries.first { $0.element == element }?.package
    }

    /// Makes an element, or fails with a line that names the package to install.
    public static func make(_ factory: String, name: String? = nil) throws -> Element {
        do {
            return try Element.make(factory, name: name)
        } catch {
            throw BuildError(missingMessage(factory))
        }
    }

    /// The Debian package with a GStreamer decoder for a stream of `caps`, or nil when none has one.
    public static func decoderPackage(forCaps caps: String) -> String? {
        switch mediaType(of: caps) {
        case "video/x-h264", "video/x-h265", "video/mpeg", "audio/mpeg", "audio/x-ac3", "audio/x-eac3",
             "audio/x-private1-ac3", "audio/x-dts", "audio/x-alac", "audio/x-wma", "video/x-wmv", "audio/x-tta":
            return "gstreamer1.0-libav"
        case "video/x-vp8", "video/x-vp9", "audio/x-flac", "audio/x-speex", "audio/x-wavpack":
            return "gstreamer1.0-plugins-good"
        case "audio/x-opus", "audio/x-vorbis", "video/x-theora":
            return "gstreamer1.0-plugins-base"
        case "video/x-av1":
            return "gstreamer1.0-plugins-bad"
        default:
            return nil
        }
    }

    /// One line for a stream GStreamer has no decoder for: what, and which package to install.
    public static func missingDecoderMessage(description: String, caps: String) -> String {
        let type = mediaType(of: caps)
        let what = description.contains(type) ? "no GStreamer \(description)" : "no GStreamer \(description) for \(type)"
        guard let package = decoderPackage(forCaps: caps) else {
            return "\(what), and no Debian package castline knows has one (this codec cannot be played here)"
        }
        // A package whose elements are here is installed: its decoder refused this stream.
        let installed = entries.contains { $0.package == package && Gst.hasElement($0.element) }
        if installed { return "\(what) that works on this stream (\(package) is installed; its decoder refused it)" }
        return "\(what) (apt-get install \(package), then `castline doctor`)"
    }

    /// "video/x-h265" of "video/x-h265, stream-format=(string)hvc1".
    private static func mediaType(of caps: String) -> String {
        String(caps.prefix { $0 != "," && $0 != " " })
    }

    public static func missingMessage(_ factory: String) -> String {
        if let package = package(for: factory) {
            return "GStreamer element \"\(factory)\" is missing (apt-get install \(package); `castline doctor` checks them all)"
        }
        return "GStreamer element \"\(factory)\" is missing (check the name with gst-inspect-1.0; `castline doctor` checks castline's own)"
    }
}
