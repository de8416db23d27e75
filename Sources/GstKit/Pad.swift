import CGStreamer
import CGStreamerShim
import GLibSupport

public enum PadDirection: Sendable { case src, sink, unknown }

/// Identifies a probe on a pad, for `Pad.removeProbe`.
public struct ProbeID: Sendable, Hashable { let raw: gulong }

/// The closure type a probe box carries.
typealias ProbeCallback = @Sendable (inout ProbeInfo) -> ProbeResult

/// A pad of an element. Wrappers compare equal when they wrap the same GstPad.
public class Pad: @unchecked Sendable, Hashable {  // holds one GstPad ref in an immutable field; pad calls are thread-safe
    let pointer: UnsafeMutablePointer<GstPad>

    init(owning pointer: UnsafeMutablePointer<GstPad>) { self.pointer = pointer }
    deinit { gst_object_unref(pointer) }

    static func wrap(owning pointer: UnsafeMutablePointer<GstPad>) -> Pad {
        castline_is_a(pointer, gst_ghost_pad_get_type()) != 0 ? GhostPad(owning: pointer) : Pad(owning: pointer)
    }
    static func wrap(borrowing pointer: UnsafeMutablePointer<GstPad>) -> Pad {
        wrap(owning: cast(gst_object_ref(pointer)))
    }

    public static func == (a: Pad, b: Pad) -> Bool { a.pointer == b.pointer }
    public func hash(into hasher: inout Hasher) { hasher.combine(pointer) }

    public var name: String { objectName(pointer) }
    /// GObject reference count, for leak tests.
    var referenceCount: UInt32 { pointer.pointee.object.object.ref_count }
    /// "element:pad", for messages.
    public var qualifiedName: String { "\(parentElement?.name ?? "?"):\(name)" }

    public var direction: PadDirection {
        switch gst_pad_get_direction(pointer) {
        case GST_PAD_SRC: .src
        case GST_PAD_SINK: .sink
        default: .unknown
        }
    }

    public var currentCaps: Caps? { gst_pad_get_current_caps(pointer).map(Caps.init(owning:)) }
    public func queryCaps(filter: Caps? = nil) -> Caps? { gst_pad_query_caps(pointer, filter?.pointer).map(Caps.init(owning:)) }
    /// The segment event stored on this pad (the last one that went through), if any.
    public var stickySegment: SegmentInfo? {
        guard let event = gst_pad_get_sticky_event(pointer, GST_EVENT_SEGMENT, 0) else { return nil }
        defer { gst_event_unref(event) }
        return EventView(event).segment
    }
    public var peer: Pad? { gst_pad_get_peer(pointer).map { Pad.wrap(owning: $0) } }
    public var isLinked: Bool { gst_pad_is_linked(pointer) != 0 }
    public var parentElement: Element? { gst_pad_get_parent_element(pointer).map { Element.wrap(owning: $0) } }

    /// Links this (source) pad to `sinkPad`; the error names the GstPadLinkReturn and both sides' caps.
    public func link(_ sinkPad: Pad) throws(GstError) {
        let result = gst_pad_link(pointer, sinkPad.pointer)
        guard result != GST_PAD_LINK_OK else { return }
        let reason = gst_pad_link_get_name(result).map { String(cString: $0) } ?? "code \(result.rawValue)"
        let up = queryCaps().map { "\($0)" } ?? "unknown"
        let down = sinkPad.queryCaps().map { "\($0)" } ?? "unknown"
        throw .link(from: qualifiedName, to: sinkPad.qualifiedName,
                    reason: "\(reason) (src caps: \(up); sink caps: \(down))")
    }
    @discardableResult
    public func unlink(_ sinkPad: Pad) -> Bool { gst_pad_unlink(pointer, sinkPad.pointer) != 0 }

    /// Sends (and consumes) the event, e.g. EOS into a sink pad.
    @discardableResult
    public func sendEvent(_ event: Event) -> Bool {
        guard let raw = event.take() else { return false }
        return gst_pad_send_event(pointer, raw) != 0
    }
    /// Pushes (and consumes) the event downstream from a source pad.
    @discardableResult
    public func pushEvent(_ event: Event) -> Bool {
        guard let raw = event.take() else { return false }
        return gst_pad_push_event(pointer, raw) != 0
    }

    /// Moves the running time of everything that leaves this pad by `nanoseconds`
    /// (gst_pad_set_offset: its segment goes out again with the base moved; timestamps stay).
    public var offset: Int64 {
        get { Int64(gst_pad_get_offset(pointer)) }
        set { gst_pad_set_offset(pointer, gint64(newValue)) }
    }

    /// gst_pad_add_probe. The closure runs on a streaming thread and is released when the probe is
    /// removed (by `removeProbe`, by returning `.remove`) or when the pad is finalized.
    /// Returns nil if the probe could not be added, or if it was an IDLE probe that GStreamer ran at
    /// once (the pad was idle) and that returned `.remove` — the closure has still run in that case.
    @discardableResult
    public func addProbe(_ mask: ProbeMask, _ callback: @escaping @Sendable (inout ProbeInfo) -> ProbeResult) -> ProbeID? {
        let box = CallbackBox<ProbeCallback>(callback)
        let id = gst_pad_add_probe(pointer, GstPadProbeType(rawValue: mask.rawValue), { pad, info, data in
            guard let info, let callback = CallbackBox<ProbeCallback>.from(data) else { return GST_PAD_PROBE_OK }
            let scope = ProbeScope(info, pad: pad)
            var view = ProbeInfo(scope: scope)
            let result = callback(&view)
            scope.invalidate()  // views that escaped the closure read nothing from now on
            return result.raw
        }, box.retainedPointer(), { data in CallbackBox<ProbeCallback>.release(data) })
        return id == 0 ? nil : ProbeID(raw: id)
    }

    public func removeProbe(_ id: ProbeID) { gst_pad_remove_probe(pointer, id.raw) }

    /// Calls `seen` when end-of-stream goes through this pad.
    public func notifyEndOfStream(_ seen: @escaping @Sendable () -> Void) {
        addProbe(.eventDownstream) { info in
            if info.event?.kind == .eos { seen() }
            return .ok
        }
    }
}

public final class GhostPad: Pad, @unchecked Sendable {  // same as Pad
    var ghostPointer: UnsafeMutablePointer<GstGhostPad> { cast(pointer) }

    @discardableResult
    public func setTarget(_ pad: Pad?) -> Bool { gst_ghost_pad_set_target(ghostPointer, pad?.pointer) != 0 }
    public var target: Pad? { gst_ghost_pad_get_target(ghostPointer).map { Pad.wrap(owning: $0) } }
}
