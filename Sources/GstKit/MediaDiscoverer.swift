import CGStreamer
import Foundation

/// One stream found in a media URI before it is played.
public struct DiscoveredStream: Sendable, Hashable {
    public enum StreamType: String, Sendable {
        case audio, video, subtitles, container, unknown
    }

    public let type: StreamType
    /// The stream's caps as text, e.g. `audio/mpeg, mpegversion=(int)4, ...`.
    public let caps: String

    /// The caps' media type, e.g. `audio/mpeg`.
    public var mediaType: String {
        String(caps.prefix { $0 != "," && $0 != ";" && $0 != " " })
    }
}

/// What is in a URI, through GstDiscoverer (synchronous; it prerolls the media once).
public enum MediaDiscoverer {
    /// The first missing decoder named in the installer details
    /// ("gstreamer|1.0|APP|DESCRIPTION|decoder-CAPS").
    private static func missingDecoder(_ info: OpaquePointer) -> GstError? {
        guard var details = gst_discoverer_info_get_missing_elements_installer_details(info) else { return nil }
        while let detail = details.pointee {
            let fields = String(cString: detail).split(separator: "|", maxSplits: 4).map(String.init)
            if fields.count == 5, fields[4].hasPrefix("decoder-") {
                return .missingDecoder(description: fields[3], caps: String(fields[4].dropFirst("decoder-".count)))
            }
            details += 1
        }
        return nil
    }

    /// The same, on a thread of its own: the synchronous discoverer waits up to `timeout` for the
    /// media to preroll, which must not hold a cooperative thread (or the actor awaiting it) meanwhile.
    public static func discover(uri: String, timeout: Duration) async throws(GstError) -> [DiscoveredStream] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[DiscoveredStream], GstError>, Never>) in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(GstError) in try discover(uri: uri, timeout: timeout) })
            }
            thread.name = "castline.discoverer"
            thread.start()
        }
        return try result.get()
    }

    /// Blocks up to `timeout`.
    public static func discover(uri: String, timeout: Duration) throws(GstError) -> [DiscoveredStream] {
        Gst.initialize()
        var error: UnsafeMutablePointer<GError>?
        guard let discoverer = gst_discoverer_new(GstClockTime(ClockTime(timeout).nanoseconds), &error) else {
            throw GstError.other(Self.takeMessage(error) ?? "cannot create a discoverer")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(discoverer)) }
        let info = gst_discoverer_discover_uri(discoverer, uri, &error)
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let message = Self.takeMessage(error)
        guard let info else { throw GstError.other(message ?? "cannot read \(uri)") }
        switch gst_discoverer_info_get_result(info) {
        case GST_DISCOVERER_OK:
            break
        case GST_DISCOVERER_TIMEOUT:
            throw GstError.other("no answer within \(Int(timeout.components.seconds)) s")
        case GST_DISCOVERER_MISSING_PLUGINS:
            if let missing = Self.missingDecoder(info) { throw missing }
            throw GstError.other("a GStreamer plugin is missing to read it (\(message ?? "see castline doctor"))")
        case GST_DISCOVERER_URI_INVALID:
            throw GstError.other("not a URI GStreamer can open")
        default:
            throw GstError.other(message ?? "cannot read it")
        }
        var streams: [DiscoveredStream] = []
        let list = gst_discoverer_info_get_stream_list(info)
        defer { gst_discoverer_stream_info_list_free(list) }
        var node = list
        while let current = node {
            if let raw = current.pointee.data {
                let stream = OpaquePointer(raw)
                let nick = gst_discoverer_stream_info_get_stream_type_nick(stream).map { String(cString: $0) } ?? ""
                var text = ""
                if let caps = gst_discoverer_stream_info_get_caps(stream) {
                    if let chars = gst_caps_to_string(caps) {
                        text = String(cString: chars)
                        g_free(chars)
                    }
                    gst_caps_unref(caps)
                }
                streams.append(DiscoveredStream(type: DiscoveredStream.StreamType(rawValue: nick) ?? .unknown, caps: text))
            }
            node = current.pointee.next
        }
        return streams
    }

    private static func takeMessage(_ error: UnsafeMutablePointer<GError>?) -> String? {
        guard let error else { return nil }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0) }
    }
}
