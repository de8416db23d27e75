import CGStreamer
import CGStreamerShim
import GLibSupport

/// A GStreamer element. Wrappers compare equal when they wrap the same GstElement.
public class Element: @unchecked Sendable, Hashable {  // holds one GstElement ref in an immutable field; GstObject refcounting, properties and state calls are thread-safe
    let pointer: UnsafeMutablePointer<GstElement>

    /// Takes over a full, non-floating reference the caller owns.
    init(owning pointer: UnsafeMutablePointer<GstElement>) { self.pointer = pointer }
    deinit { gst_object_unref(pointer) }

    /// The most specific wrapper (Pipeline, Bin or Element) for a reference the caller owns.
    static func wrap(owning pointer: UnsafeMutablePointer<GstElement>) -> Element {
        if castline_is_a(pointer, gst_pipeline_get_type()) != 0 { return Pipeline(owning: pointer) }
        if castline_is_bin(pointer) != 0 { return Bin(owning: pointer) }
        return Element(owning: pointer)
    }
    /// For transfer-floating results (factory_make, parse): sink the floating ref and own it.
    static func wrap(sinking pointer: UnsafeMutablePointer<GstElement>) -> Element {
        // A floating ref becomes ours; a result that is already a full ref is ours as is.
        if g_object_is_floating(pointer) != 0 { _ = gst_object_ref_sink(pointer) }
        return wrap(owning: pointer)
    }
    /// For transfer-none pointers (signal arguments): add a reference of our own.
    static func wrap(borrowing pointer: UnsafeMutablePointer<GstElement>) -> Element {
        wrap(owning: cast(gst_object_ref(pointer)))
    }

    public static func make(_ factory: String, name: String? = nil) throws(GstError) -> Element {
        Gst.initialize()
        guard let made = gst_element_factory_make(factory, name) else {
            if !Gst.hasElement(factory) { throw .missingElement(factory: factory) }
            throw .other("factory \"\(factory)\" failed to create an element")
        }
        return wrap(sinking: made)
    }

    public static func == (a: Element, b: Element) -> Bool { a.pointer == b.pointer }
    public func hash(into hasher: inout Hasher) { hasher.combine(pointer) }

    public var name: String { objectName(pointer) }

    public var factoryName: String? {
        guard let factory = gst_element_get_factory(pointer) else { return nil }
        return objectName(UnsafeMutableRawPointer(factory))  // a factory's object name is the factory name
    }

    /// GObject type name, e.g. "GstAppSink".
    public var typeName: String { castline_type_name_of(pointer).map { String(cString: $0) } ?? "" }

    // MARK: Pads

    public func staticPad(_ name: String) -> Pad? {
        gst_element_get_static_pad(pointer, name).map { Pad.wrap(owning: $0) }
    }
    /// gst_element_request_pad_simple, e.g. "sink_%u".
    public func requestPad(_ templateName: String) -> Pad? {
        gst_element_request_pad_simple(pointer, templateName).map { Pad.wrap(owning: $0) }
    }
    public func releaseRequestPad(_ pad: Pad) { gst_element_release_request_pad(pointer, pad.pointer) }

    public var pads: [Pad] {
        collect(gst_element_iterate_pads(pointer)) { Pad.wrap(borrowing: cast($0)) }
    }
    public var srcPads: [Pad] { collect(gst_element_iterate_src_pads(pointer)) { Pad.wrap(borrowing: cast($0)) } }
    public var sinkPads: [Pad] { collect(gst_element_iterate_sink_pads(pointer)) { Pad.wrap(borrowing: cast($0)) } }

    // MARK: Linking

    public func link(_ downstream: Element) throws(GstError) {
        guard gst_element_link(pointer, downstream.pointer) != 0 else {
            throw linkError(downstream, reason: "no compatible pads")
        }
    }
    public func link(_ downstream: Element, filter: Caps) throws(GstError) {
        guard gst_element_link_filtered(pointer, downstream.pointer, filter.pointer) != 0 else {
            throw linkError(downstream, reason: "no compatible pads with filter \(filter)")
        }
    }
    public func unlink(_ downstream: Element) { gst_element_unlink(pointer, downstream.pointer) }

    private func linkError(_ downstream: Element, reason: String) -> GstError {
        let up = srcPads.first?.queryCaps().map { "\($0)" } ?? "no src pad"
        let down = downstream.sinkPads.first?.queryCaps().map { "\($0)" } ?? "no sink pad"
        return .link(from: name, to: downstream.name, reason: "\(reason) (upstream caps: \(up); downstream caps: \(down))")
    }

    // MARK: State

    @discardableResult
    public func setState(_ state: ElementState) -> StateChangeResult {
        let result = StateChangeResult(gst_element_set_state(pointer, state.raw))
        if state == .null, let pipeline = self as? Pipeline { pipeline.busWentFlushing() }
        return result
    }
    /// setState that throws `.stateChange` on failure (async and no-preroll are not failures).
    @discardableResult
    public func changeState(to state: ElementState) throws(GstError) -> StateChangeResult {
        let result = setState(state)
        if result == .failure { throw .stateChange(element: name, to: state) }
        return result
    }

    /// GObject reference count, for leak tests.
    var referenceCount: UInt32 { pointer.pointee.object.object.ref_count }

    /// gst_element_get_state; `.zero` answers at once, nil waits forever.
    public func currentState(timeout: Duration? = .zero) -> (result: StateChangeResult, current: ElementState, pending: ElementState) {
        var current = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING
        let result = gst_element_get_state(pointer, &current, &pending, timeout.clockTimeout)
        return (StateChangeResult(result), ElementState(current), ElementState(pending))
    }
    @discardableResult
    public func syncStateWithParent() -> Bool { gst_element_sync_state_with_parent(pointer) != 0 }
    public func setLockedState(_ locked: Bool) { gst_element_set_locked_state(pointer, locked ? 1 : 0) }
    /// For a sink that passes media on (an appsink feeding an appsrc): its bin then
    /// waits for neither its preroll nor its end-of-stream.
    public func unsetSinkFlag() { castline_element_unset_sink_flag(pointer) }

    /// Sends (and consumes) the event; false if it was not handled or was already sent.
    @discardableResult
    public func sendEvent(_ event: Event) -> Bool {
        guard let raw = event.take() else { return false }
        return gst_element_send_event(pointer, raw) != 0
    }

    public func queryPosition() -> ClockTime? {
        var value: gint64 = -1
        guard gst_element_query_position(pointer, GST_FORMAT_TIME, &value) != 0, value >= 0 else { return nil }
        return ClockTime(nanoseconds: UInt64(value))
    }
    public func queryDuration() -> ClockTime? {
        var value: gint64 = -1
        guard gst_element_query_duration(pointer, GST_FORMAT_TIME, &value) != 0, value >= 0 else { return nil }
        return ClockTime(nanoseconds: UInt64(value))
    }

    /// The containing bin, if any.
    public var parent: Element? {
        guard let p = gst_object_get_parent(cast(pointer, to: GstObject.self)) else { return nil }
        guard castline_is_a(p, gst_element_get_type()) != 0 else { gst_object_unref(p); return nil }
        return Element.wrap(owning: cast(p))
    }

    /// The top-level pipeline it sits in, at any depth.
    public var pipeline: Pipeline? {
        var current = parent
        while let candidate = current {
            if let pipeline = candidate as? Pipeline { return pipeline }
            current = candidate.parent
        }
        return nil
    }

    public var baseTime: ClockTime? { ClockTime(raw: gst_element_get_base_time(pointer)) }
    public var startTime: ClockTime? { ClockTime(raw: gst_element_get_start_time(pointer)) }
    /// Clock time minus base time, while the element plays. Not before: a pipeline gives its
    /// children the clock first and their base time just before each goes to PLAYING, so in
    /// between clock minus base is the clock's own time (the machine's uptime at first start).
    /// Not when paused either: the clock runs on but the time line does not.
    public var runningTime: ClockTime? {
        guard currentState(timeout: .zero).current == .playing,
              let now = clock?.time, let base = baseTime, now >= base else { return nil }
        return ClockTime(nanoseconds: now.nanoseconds - base.nanoseconds)
    }
    public var clock: Clock? { gst_element_get_clock(pointer).map(Clock.init(owning:)) }

    /// The running time it stands at, paused after it played (GStreamer's start time: where a
    /// pipeline resumes from); nil while it plays, and before it first played.
    public var pausedRunningTime: ClockTime? {
        guard currentState(timeout: .zero).current == .paused, let time = startTime, time.nanoseconds > 0 else { return nil }
        return time
    }

    /// Posts an error from this element (a resource error), as if the element had failed: what
    /// a part working beside an element (its signalling) says on the element's bus.
    public func postError(_ text: String) {
        let error = g_error_new_literal(gst_resource_error_quark(), gint(GST_RESOURCE_ERROR_FAILED.rawValue), text)
        let message = gst_message_new_error(cast(pointer, to: GstObject.self), error, nil)
        g_error_free(error)
        gst_element_post_message(pointer, message)
    }

    /// Posts an application message from this element.
    @discardableResult
    public func postApplicationMessage(_ structure: Structure) -> Bool {
        let message = gst_message_new_application(cast(pointer, to: GstObject.self), gst_structure_copy(structure.pointer))
        return gst_element_post_message(pointer, message) != 0
    }
}

/// The pipeline clock.
public final class Clock: @unchecked Sendable {  // one GstClock ref in an immutable field; clock calls are thread-safe
    let pointer: UnsafeMutablePointer<GstClock>
    init(owning pointer: UnsafeMutablePointer<GstClock>) { self.pointer = pointer }
    deinit { gst_object_unref(pointer) }
    public var time: ClockTime? { ClockTime(raw: gst_clock_get_time(pointer)) }
}

/// Drains a GstIterator of GObjects, restarting on RESYNC as GStreamer requires.
func collect<T>(_ iterator: UnsafeMutablePointer<GstIterator>?, _ transform: (UnsafeMutableRawPointer) -> T) -> [T] {
    guard let iterator else { return [] }
    defer { gst_iterator_free(iterator) }
    var result: [T] = []
    var item = GValue()
    defer { if item.g_type != 0 { g_value_unset(&item) } }
    while true {
        switch gst_iterator_next(iterator, &item) {
        case GST_ITERATOR_OK:
            if let object = g_value_get_object(&item) { result.append(transform(object)) }
            g_value_reset(&item)
        case GST_ITERATOR_RESYNC:
            result.removeAll()
            gst_iterator_resync(iterator)
        default:
            return result
        }
    }
}
