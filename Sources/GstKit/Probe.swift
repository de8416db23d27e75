import CGStreamer
import CGStreamerShim

/// GstPadProbeType.
public struct ProbeMask: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let idle = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_IDLE.rawValue)
    public static let block = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BLOCK.rawValue)
    public static let buffer = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue)
    public static let bufferList = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
    public static let eventDownstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
    public static let eventUpstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_EVENT_UPSTREAM.rawValue)
    public static let eventFlush = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue)
    public static let queryDownstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM.rawValue)
    public static let queryUpstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_QUERY_UPSTREAM.rawValue)
    public static let push = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_PUSH.rawValue)
    public static let pull = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_PULL.rawValue)
    /// idle | block, as GST_PAD_PROBE_TYPE_BLOCKING.
    public static let blocking = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BLOCKING.rawValue)
    public static let eventBoth = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_EVENT_BOTH.rawValue)
    public static let queryBoth = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_QUERY_BOTH.rawValue)
    /// buffer | bufferList | eventDownstream
    public static let dataDownstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM.rawValue)
    public static let dataUpstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_DATA_UPSTREAM.rawValue)
    public static let dataBoth = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_DATA_BOTH.rawValue)
    public static let blockDownstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM.rawValue)
    public static let blockUpstream = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_BLOCK_UPSTREAM.rawValue)
    public static let allBoth = ProbeMask(rawValue: GST_PAD_PROBE_TYPE_ALL_BOTH.rawValue)
}

public enum ProbeResult: Sendable {
    case ok, drop, remove, pass, handled
    var raw: GstPadProbeReturn {
        switch self {
        case .ok: GST_PAD_PROBE_OK
        case .drop: GST_PAD_PROBE_DROP
        case .remove: GST_PAD_PROBE_REMOVE
        case .pass: GST_PAD_PROBE_PASS
        case .handled: GST_PAD_PROBE_HANDLED
        }
    }
}

/// The probe info pointer, valid only until the probe callback returns; afterwards every view reads nothing.
final class ProbeScope {
    private(set) var info: UnsafeMutablePointer<GstPadProbeInfo>?
    private(set) var pad: UnsafeMutablePointer<GstPad>?
    init(_ info: UnsafeMutablePointer<GstPadProbeInfo>, pad: UnsafeMutablePointer<GstPad>?) {
        self.info = info
        self.pad = pad
    }
    func invalidate() {
        info = nil
        pad = nil
    }
}

/// A view onto GstPadProbeInfo. (Not `~Escapable`: that needs lifetime annotations behind an
/// experimental flag.) It is meaningful only inside the probe callback: copies that escape
/// read as empty (nil buffer/event, no-op writes), and it is not Sendable.
public struct ProbeInfo {
    let scope: ProbeScope

    /// Which kind of data triggered the probe (e.g. `.buffer`, `.eventDownstream`, `.idle`, with `.push`/`.block` bits).
    public var type: ProbeMask { ProbeMask(rawValue: scope.info?.pointee.type.rawValue ?? 0) }

    /// The probed pad: reach the element through it rather than capturing the element in the
    /// probe's closure, which would be a reference cycle (element → pad → probe → element).
    public var pad: Pad? { scope.pad.map { Pad.wrap(borrowing: $0) } }

    /// The buffer, for buffer probes.
    public var buffer: BufferView? {
        guard let info = scope.info, let raw = castline_probe_info_buffer(info) else { return nil }
        return BufferView(raw, scope: scope)
    }
    /// The event, for event probes.
    public var event: EventView? {
        guard let info = scope.info, let raw = castline_probe_info_event(info) else { return nil }
        return EventView(raw)
    }

    /// The query, for query probes.
    public var query: QueryView? {
        guard let info = scope.info, let raw = castline_probe_info_query(info) else { return nil }
        return QueryView(raw)
    }

    /// Makes the probe's buffer writable (copying it if shared), stores it back into the probe
    /// info so the modified buffer is what flows on, and runs `body` on it. nil if there is no buffer.
    public mutating func withWritableBuffer<R>(_ body: (inout MutableBufferView) -> R) -> R? {
        guard let info = scope.info, let raw = castline_probe_info_make_buffer_writable(info) else { return nil }
        var view = MutableBufferView(raw, scope: scope)
        return body(&view)
    }
}

@available(*, unavailable)
extension ProbeInfo: Sendable {}

// GstBufferFlags values (Swift imports them as struct constants).
let bufferFlagDiscont = GST_BUFFER_FLAG_DISCONT.rawValue
let bufferFlagDelta = GST_BUFFER_FLAG_DELTA_UNIT.rawValue
let bufferFlagGap = GST_BUFFER_FLAG_GAP.rawValue
let bufferFlagHeader = GST_BUFFER_FLAG_HEADER.rawValue

/// Read access to a buffer inside a probe. Metadata is copied when the view is made; bytes are
/// readable only while the probe callback runs.
public struct BufferView {
    private let raw: UnsafeMutablePointer<GstBuffer>
    private let scope: ProbeScope
    public let pts: ClockTime?
    public let dts: ClockTime?
    public let duration: ClockTime?
    public let size: Int
    public let isDiscont: Bool
    /// GST_BUFFER_FLAG_DELTA_UNIT: not a keyframe.
    public let isDelta: Bool
    public let isGap: Bool
    public let isHeader: Bool

    init(_ raw: UnsafeMutablePointer<GstBuffer>, scope: ProbeScope) {
        self.raw = raw
        self.scope = scope
        pts = ClockTime(raw: raw.pointee.pts)
        dts = ClockTime(raw: raw.pointee.dts)
        duration = ClockTime(raw: raw.pointee.duration)
        size = Int(gst_buffer_get_size(raw))
        isDiscont = castline_buffer_flag_is_set(raw, bufferFlagDiscont) != 0
        isDelta = castline_buffer_flag_is_set(raw, bufferFlagDelta) != 0
        isGap = castline_buffer_flag_is_set(raw, bufferFlagGap) != 0
        isHeader = castline_buffer_flag_is_set(raw, bufferFlagHeader) != 0
    }

    /// Maps the buffer for reading; nil after the callback returned or if mapping fails.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard scope.info != nil else { return nil }
        return mapBuffer(raw, body)
    }

    /// A video buffer's first plane (luma), offset and row stride in bytes, when its video
    /// meta says (a decoder may pad rows); nil: the caps' default layout holds.
    public var firstPlane: (offset: Int, stride: Int)? {
        var offset = 0, stride: Int32 = 0
        guard castline_buffer_first_plane(raw, &offset, &stride) != 0 else { return nil }
        return (offset, Int(stride))
    }
}

@available(*, unavailable)
extension BufferView: Sendable {}

func mapBuffer<R>(_ raw: UnsafeMutablePointer<GstBuffer>, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
    var map = GstMapInfo()
    guard gst_buffer_map(raw, &map, GST_MAP_READ) != 0 else { return nil }
    defer { gst_buffer_unmap(raw, &map) }
    return body(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
}

/// Write access to a probe's (writable) buffer; only meaningful inside `withWritableBuffer`.
public struct MutableBufferView {
    private let raw: UnsafeMutablePointer<GstBuffer>
    private let scope: ProbeScope

    init(_ raw: UnsafeMutablePointer<GstBuffer>, scope: ProbeScope) {
        self.raw = raw
        self.scope = scope
    }

    private var live: UnsafeMutablePointer<GstBuffer>? { scope.info == nil ? nil : raw }

    public var pts: ClockTime? {
        get { live.flatMap { ClockTime(raw: $0.pointee.pts) } }
        nonmutating set { live?.pointee.pts = newValue.raw }
    }
    public var dts: ClockTime? {
        get { live.flatMap { ClockTime(raw: $0.pointee.dts) } }
        nonmutating set { live?.pointee.dts = newValue.raw }
    }
    public var duration: ClockTime? {
        get { live.flatMap { ClockTime(raw: $0.pointee.duration) } }
        nonmutating set { live?.pointee.duration = newValue.raw }
    }
    public var size: Int { live.map { Int(gst_buffer_get_size($0)) } ?? 0 }

    private func flag(_ f: UInt32) -> Bool { live.map { castline_buffer_flag_is_set($0, f) != 0 } ?? false }
    private func setFlag(_ f: UInt32, _ on: Bool) { if let live { castline_buffer_flag_set(live, f, on ? 1 : 0) } }

    public var isDiscont: Bool { get { flag(bufferFlagDiscont) } nonmutating set { setFlag(bufferFlagDiscont, newValue) } }
    public var isDelta: Bool { get { flag(bufferFlagDelta) } nonmutating set { setFlag(bufferFlagDelta, newValue) } }
    public var isGap: Bool { get { flag(bufferFlagGap) } nonmutating set { setFlag(bufferFlagGap, newValue) } }
    public var isHeader: Bool { get { flag(bufferFlagHeader) } nonmutating set { setFlag(bufferFlagHeader, newValue) } }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard let live else { return nil }
        return mapBuffer(live, body)
    }
    /// Maps the buffer for writing.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R? {
        guard let live else { return nil }
        var map = GstMapInfo()
        guard gst_buffer_map(live, &map, GST_MAP_WRITE) != 0 else { return nil }
        defer { gst_buffer_unmap(live, &map) }
        return body(UnsafeMutableRawBufferPointer(start: map.data, count: Int(map.size)))
    }
}

@available(*, unavailable)
extension MutableBufferView: Sendable {}
