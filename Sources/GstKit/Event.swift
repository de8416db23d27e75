import CGStreamer
import CGStreamerShim
import GLibSupport

/// An event to send. It owns its GstEvent until sent: sending transfers it, so an Event is sent at most once.
public final class Event: Sendable {
    /// The GstEvent reference, held by exactly one owner: this Event until it is taken to be sent.
    private struct Owned: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<GstEvent>
    }
    private let state: Protected<Owned?>

    init(owning pointer: UnsafeMutablePointer<GstEvent>) { state = Protected(Owned(pointer: pointer)) }
    deinit { if let pointer = take() { gst_event_unref(pointer) } }

    /// Hands the reference to the caller (who passes it to a transfer-full send); nil once taken.
    func take() -> UnsafeMutablePointer<GstEvent>? { state.withLock { owned in defer { owned = nil }; return owned }?.pointer }

    /// true once the event has been sent.
    public var isSent: Bool { state.withLock { $0 == nil } }

    public var kind: EventKind { state.withLock { owned in owned.map { EventKind($0.pointer.pointee.type) } ?? .other("sent") } }

    public static func endOfStream() -> Event { Gst.initialize(); return Event(owning: gst_event_new_eos()) }

    /// Downstream force-key-unit (ask encoders below to emit a keyframe now).
    public static func forceKeyUnit(allHeaders: Bool = true) -> Event {
        Gst.initialize()
        return Event(owning: gst_video_event_new_downstream_force_key_unit(
            GstClockTime.max, GstClockTime.max, GstClockTime.max, allHeaders ? 1 : 0, 0))
    }
    /// Upstream force-key-unit (sent from downstream towards the encoder).
    public static func upstreamForceKeyUnit(allHeaders: Bool = true) -> Event {
        Gst.initialize()
        return Event(owning: gst_video_event_new_upstream_force_key_unit(GstClockTime.max, allHeaders ? 1 : 0, 0))
    }
    /// A flushing seek to `position` (stream time), landing on a keyframe.
    public static func seek(to position: ClockTime) -> Event {
        Gst.initialize()
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_KEY_UNIT.rawValue)
        return Event(owning: gst_event_new_seek(1.0, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET,
                                                gint64(position.nanoseconds), GST_SEEK_TYPE_NONE, -1))
    }

    public static func flushStart() -> Event { Gst.initialize(); return Event(owning: gst_event_new_flush_start()) }
    public static func flushStop(resetTime: Bool) -> Event {
        Gst.initialize()
        return Event(owning: gst_event_new_flush_stop(resetTime ? 1 : 0))
    }
    /// A segment event carrying `segment` (a time segment, as `EventView` reads them).
    public static func segment(_ segment: SegmentInfo) -> Event {
        Gst.initialize()
        var raw = GstSegment()
        gst_segment_init(&raw, segment.isTimeFormat ? GST_FORMAT_TIME : GST_FORMAT_UNDEFINED)
        raw.rate = segment.rate
        raw.start = segment.start.raw
        raw.stop = segment.stop.raw
        raw.time = segment.time.raw
        raw.base = segment.base.raw
        raw.position = segment.position.raw
        raw.offset = segment.offset.raw
        return Event(owning: gst_event_new_segment(&raw))
    }
    public static func customDownstream(_ structure: Structure) -> Event {
        Gst.initialize()
        return Event(owning: gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_copy(structure.pointer)))
    }
    public static func customUpstream(_ structure: Structure) -> Event {
        Gst.initialize()
        return Event(owning: gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, gst_structure_copy(structure.pointer)))
    }
}

public enum EventKind: Sendable, Hashable {
    case streamStart, caps, segment, tag, eos, flushStart, flushStop, gap, customDownstream, customUpstream
    case qos, latency, seek, reconfigure
    case other(String)

    init(_ raw: GstEventType) {
        switch raw {
        case GST_EVENT_STREAM_START: self = .streamStart
        case GST_EVENT_CAPS: self = .caps
        case GST_EVENT_SEGMENT: self = .segment
        case GST_EVENT_TAG: self = .tag
        case GST_EVENT_EOS: self = .eos
        case GST_EVENT_FLUSH_START: self = .flushStart
        case GST_EVENT_FLUSH_STOP: self = .flushStop
        case GST_EVENT_GAP: self = .gap
        case GST_EVENT_CUSTOM_DOWNSTREAM: self = .customDownstream
        case GST_EVENT_CUSTOM_UPSTREAM: self = .customUpstream
        case GST_EVENT_QOS: self = .qos
        case GST_EVENT_LATENCY: self = .latency
        case GST_EVENT_SEEK: self = .seek
        case GST_EVENT_RECONFIGURE: self = .reconfigure
        default: self = .other(gst_event_type_get_name(raw).map { String(cString: $0) } ?? "unknown")
        }
    }
}

/// The time fields of a segment event (GstSegment in GST_FORMAT_TIME).
public struct SegmentInfo: Sendable, Hashable {
    public var rate: Double
    public var start: ClockTime?
    public var stop: ClockTime?
    public var time: ClockTime?
    public var base: ClockTime?
    public var position: ClockTime?
    public var isTimeFormat: Bool
    /// How far into the segment running time starts (a negative pad offset puts it here).
    public var offset: ClockTime? = nil

    /// `position` lies before this forward time segment's start (plus offset): no running time, and
    /// no media (an audio encoder's priming frames, which muxers and sinks drop).
    public func isBeforeStart(_ position: ClockTime) -> Bool {
        isTimeFormat && rate > 0 && position.nanoseconds < (start?.nanoseconds ?? 0) &+ (offset?.nanoseconds ?? 0)
    }

    /// The running time of `position` in this (forward, time) segment, as gst_segment_to_running_time
    /// computes it for positions inside the segment; nil before its start (start plus offset).
    public func runningTime(of position: ClockTime) -> ClockTime? {
        let start = (start?.nanoseconds ?? 0) &+ (offset?.nanoseconds ?? 0)
        guard isTimeFormat, rate > 0, position.nanoseconds >= start else { return nil }
        let into = Double(position.nanoseconds - start) / rate
        return ClockTime(nanoseconds: UInt64(into) &+ (base?.nanoseconds ?? 0))
    }

    /// GStreamer's stream time of `position` in this forward time segment at rate 1, from its start
    /// on (nil before it); the stop and an applied rate are not taken into account.
    public func streamTime(of position: ClockTime) -> ClockTime? {
        let start = start?.nanoseconds ?? 0
        guard isTimeFormat, position.nanoseconds >= start else { return nil }
        return ClockTime(nanoseconds: (time?.nanoseconds ?? 0) &+ (position.nanoseconds - start))
    }

    /// The same, signed, for a position before the segment's start too (gst_segment_to_stream_time_full).
    public func signedStreamTime(of position: ClockTime) -> Int64 {
        Int64(clamping: position.nanoseconds) - Int64(clamping: start?.nanoseconds ?? 0) + Int64(clamping: time?.nanoseconds ?? 0)
    }

    /// GStreamer's stream time (what a player's position shows) of running time `running` in
    /// this forward time segment, as gst_segment_to_position then gst_segment_to_stream_time
    /// compute it; nil before the segment's start.
    public func streamTime(ofRunningTime running: ClockTime) -> ClockTime? {
        position(ofRunningTime: running).flatMap(streamTime(of:))
    }

    /// The position (a timestamp in this forward time segment) of running time `running`, as
    /// gst_segment_to_position computes it; nil before the segment's start.
    public func position(ofRunningTime running: ClockTime) -> ClockTime? {
        let base = base?.nanoseconds ?? 0
        guard isTimeFormat, rate > 0, running.nanoseconds >= base else { return nil }
        let into = UInt64(Double(running.nanoseconds - base) * rate)
        return ClockTime(nanoseconds: (start?.nanoseconds ?? 0) &+ (offset?.nanoseconds ?? 0) &+ into)
    }
}

/// A copy of what an event carries, taken while the probe ran; safe to keep.
public struct EventView: Sendable {
    public let kind: EventKind
    /// For caps events.
    public let caps: Caps?
    /// For segment events.
    public let segment: SegmentInfo?
    /// Name of the event's structure (e.g. "GstForceKeyUnit" for force-key-unit events).
    public let structureName: String?
    /// The structure, copied, for custom events.
    public let structure: Structure?
    /// For latency events: the pipeline's latency, which sinks pass upstream once it is set.
    public let latency: ClockTime?

    init(_ raw: UnsafeMutablePointer<GstEvent>) {
        kind = EventKind(raw.pointee.type)
        if kind == .caps {
            var c: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(raw, &c)
            caps = c.map(Caps.init(borrowing:))
        } else {
            caps = nil
        }
        if kind == .segment {
            var s: UnsafePointer<GstSegment>?
            gst_event_parse_segment(raw, &s)
            segment = s.map { s in
                SegmentInfo(rate: s.pointee.rate, start: ClockTime(raw: s.pointee.start), stop: ClockTime(raw: s.pointee.stop),
                            time: ClockTime(raw: s.pointee.time), base: ClockTime(raw: s.pointee.base),
                            position: ClockTime(raw: s.pointee.position), isTimeFormat: s.pointee.format == GST_FORMAT_TIME,
                            offset: ClockTime(raw: s.pointee.offset))
            }
        } else {
            segment = nil
        }
        if kind == .latency {
            var value: GstClockTime = 0
            gst_event_parse_latency(raw, &value)
            latency = ClockTime(raw: value)
        } else {
            latency = nil
        }
        let s = gst_event_get_structure(raw)
        structureName = s.flatMap { gst_structure_get_name($0) }.map { String(cString: $0) }
        structure = (kind == .customDownstream || kind == .customUpstream) ? s.map(Structure.init(copying:)) : nil
    }

    /// true for a force-key-unit event (either direction).
    public var isForceKeyUnit: Bool { structureName == "GstForceKeyUnit" }
}
