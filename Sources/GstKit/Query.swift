import CGStreamer
import CGStreamerShim

/// A custom query (GST_QUERY_CUSTOM) carrying a structure: asked through a pad, it travels
/// upstream (or downstream) element by element until one answers by filling in fields,
/// the way GStreamer's own latency and position queries do.
public final class CustomQuery: @unchecked Sendable {  // one GstQuery, used by one caller at a time
    let pointer: UnsafeMutablePointer<GstQuery>

    public init(_ structure: Structure) {
        pointer = castline_query_new_custom(gst_structure_copy(structure.pointer))
    }

    deinit { gst_query_unref(pointer) }

    /// The structure as it stands (with what an answer filled in).
    public var structure: Structure? {
        gst_query_get_structure(pointer).map { Structure(copying: $0) }
    }
}

extension Pad {
    /// Asks the pad's peer; true when something answered.
    public func peerQuery(_ query: CustomQuery) -> Bool { gst_pad_peer_query(pointer, query.pointer) != 0 }

    /// Whether what reaches this (sink) pad comes from a live source, as the latency query
    /// upstream of it says (the sources answer it, whatever the sinks do); nil when none answers.
    public var upstreamIsLive: Bool? { upstreamLatency?.live }

    /// The latency query's answer from upstream of this (sink) pad: whether a live source feeds it,
    /// and how long what is upstream holds media back at least and at most (nil: no bound).
    public var upstreamLatency: (live: Bool, min: ClockTime, max: ClockTime?)? {
        guard let query = gst_query_new_latency() else { return nil }
        defer { gst_query_unref(query) }
        guard gst_pad_peer_query(pointer, query) != 0 else { return nil }
        return latencyAnswer(query)
    }
}

/// What an answered latency query says.
func latencyAnswer(_ query: UnsafeMutablePointer<GstQuery>) -> (live: Bool, min: ClockTime, max: ClockTime?) {
    var live: gboolean = 0, min: GstClockTime = 0, max: GstClockTime = 0
    gst_query_parse_latency(query, &live, &min, &max)
    return (live != 0, ClockTime(raw: min) ?? .zero, ClockTime(raw: max))
}

/// A query seen by a probe: read it, and answer a custom one by setting fields (then return `.handled`).
public struct QueryView {
    let raw: UnsafeMutablePointer<GstQuery>
    init(_ raw: UnsafeMutablePointer<GstQuery>) { self.raw = raw }

    /// The custom query's structure name; nil for GStreamer's own queries.
    public var customName: String? {
        guard raw.pointee.type == GST_QUERY_CUSTOM, let structure = gst_query_get_structure(raw) else { return nil }
        return gst_structure_get_name(structure).map { String(cString: $0) }
    }

    public var structure: Structure? { gst_query_get_structure(raw).map { Structure(copying: $0) } }

    public var isLatency: Bool { raw.pointee.type == GST_QUERY_LATENCY }

    /// Answers a latency query (then return `.handled`): `max` nil for no bound.
    public func setLatency(live: Bool, min: ClockTime, max: ClockTime?) {
        gst_query_set_latency(raw, live ? 1 : 0, GstClockTime(min.nanoseconds), max.map { GstClockTime($0.nanoseconds) } ?? GstClockTime.max)
    }

    /// Sets a guint64 field of a custom query (its answer).
    public func set(_ field: String, _ value: UInt64) {
        guard let structure = gst_query_writable_structure(raw) else { return }
        var gvalue = GValue()
        g_value_init(&gvalue, castline_type_uint64())
        g_value_set_uint64(&gvalue, guint64(value))
        gst_structure_set_value(structure, field, &gvalue)
        g_value_unset(&gvalue)
    }
}
