import CGStreamer
import CGStreamerShim
import GLibSupport

/// What `Bin.dotGraph` includes (GstDebugGraphDetails).
public struct DotDetails: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let mediaType = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_MEDIA_TYPE.rawValue))
    public static let capsDetails = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_CAPS_DETAILS.rawValue))
    public static let nonDefaultParams = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_NON_DEFAULT_PARAMS.rawValue))
    public static let states = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_STATES.rawValue))
    public static let fullParams = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_FULL_PARAMS.rawValue))
    public static let all = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_ALL.rawValue))
    public static let verbose = DotDetails(rawValue: UInt32(bitPattern: GST_DEBUG_GRAPH_SHOW_VERBOSE.rawValue))
}

/// A container of elements.
public class Bin: Element, @unchecked Sendable {  // same as Element: one ref, immutable fields
    var binPointer: UnsafeMutablePointer<GstBin> { cast(pointer) }

    public convenience init(name: String? = nil) {
        Gst.initialize()
        let made: UnsafeMutablePointer<GstElement> = gst_bin_new(name)
        _ = gst_object_ref_sink(made)  // gst_bin_new returns a floating ref
        self.init(owning: made)
    }

    /// Adds the element; the bin takes its own reference, this wrapper keeps its one.
    public func add(_ element: Element) throws(GstError) {
        if let existing = gst_object_get_parent(cast(element.pointer, to: GstObject.self)) {
            let parentName = objectName(existing)
            gst_object_unref(existing)
            throw .other("cannot add \"\(element.name)\" to \"\(name)\": it is already in \"\(parentName)\"")
        }
        guard gst_bin_add(binPointer, element.pointer) != 0 else {
            throw .other("cannot add \"\(element.name)\" to \"\(name)\" (name already used in the bin?)")
        }
    }
    public func add(_ elements: Element...) throws(GstError) {
        for element in elements { try add(element) }
    }
    public func remove(_ element: Element) throws(GstError) {
        guard gst_bin_remove(binPointer, element.pointer) != 0 else {
            throw .other("\"\(element.name)\" is not in \"\(name)\"")
        }
    }

    /// Searches this bin and its child bins.
    public func element(named name: String) -> Element? {
        gst_bin_get_by_name(binPointer, name).map { Element.wrap(owning: $0) }
    }

    /// Direct children.
    public var children: [Element] {
        collect(gst_bin_iterate_elements(binPointer)) { Element.wrap(borrowing: $0.assumingMemoryBound(to: GstElement.self)) }
    }

    /// Every element inside this bin, at any depth.
    public var descendants: [Element] {
        collect(gst_bin_iterate_recurse(binPointer)) { Element.wrap(borrowing: $0.assumingMemoryBound(to: GstElement.self)) }
    }

    /// Whether a source in it, at any depth, is live (`is-live`): a latency query says live only
    /// where a sink syncs to the clock, and a recording written as it comes has none.
    public var hasLiveSource: Bool {
        descendants.contains { element in
            element.pointer.pointee.object.flags & GST_ELEMENT_FLAG_SOURCE.rawValue != 0 && element.bool("is-live") == true
        }
    }

    /// The sink elements inside this bin and its child bins (those flagged as sinks).
    public var sinks: [Element] {
        collect(gst_bin_iterate_sinks(binPointer)) { Element.wrap(borrowing: $0.assumingMemoryBound(to: GstElement.self)) }
    }

    /// Ghosts `target` on this bin; activates the ghost pad first when the bin is already running.
    @discardableResult
    public func addGhostPad(name: String, target: Pad) throws(GstError) -> GhostPad {
        guard let made = gst_ghost_pad_new(name, target.pointer) else {
            throw .other("cannot create ghost pad \"\(name)\" for \(target.qualifiedName)")
        }
        _ = gst_object_ref_sink(made)  // ours; gst_element_add_pad then takes its own
        let ghost = GhostPad(owning: made)
        if castline_element_current_state(pointer).rawValue > GST_STATE_READY.rawValue {
            gst_pad_set_active(made, 1)
        }
        guard gst_element_add_pad(pointer, made) != 0 else {
            throw .other("bin \"\(self.name)\" already has a pad named \"\(name)\"")
        }
        return ghost
    }

    /// Graphviz source of the bin's current topology.
    public func dotGraph(details: DotDetails = .all) -> String {
        takeString(gst_debug_bin_to_dot_data(binPointer, GstDebugGraphDetails(rawValue: Int32(bitPattern: details.rawValue)))) ?? ""
    }
}

/// A top-level bin with a clock and a bus.
public final class Pipeline: Bin, @unchecked Sendable {  // same as Element: one ref, immutable fields
    var pipelinePointer: UnsafeMutablePointer<GstPipeline> { cast(pointer) }

    /// Installs the bus dispatcher before anything can post, so no message is missed.
    override init(owning pointer: UnsafeMutablePointer<GstElement>) {
        super.init(owning: pointer)
        if let raw = gst_pipeline_get_bus(pipelinePointer) {
            BusDispatcher.install(on: raw)
            gst_object_unref(raw)
        }
    }

    public convenience init(name: String? = nil) {
        Gst.initialize()
        let made: UnsafeMutablePointer<GstElement> = gst_pipeline_new(name)
        _ = gst_object_ref_sink(made)  // gst_pipeline_new returns a floating ref
        self.init(owning: made)
    }

    public var bus: Bus {
        // A pipeline always has a bus; the fallback is a detached one so this never traps.
        if let raw = gst_pipeline_get_bus(pipelinePointer) { return Bus(owning: raw) }
        return Bus(owning: gst_bus_new())
    }

    public func queryLatency() -> (live: Bool, min: ClockTime, max: ClockTime?)? {
        guard let query = gst_query_new_latency() else { return nil }
        defer { gst_query_unref(query) }
        guard gst_element_query(pointer, query) != 0 else { return nil }
        return latencyAnswer(query)
    }

    /// Queries the sinks' latency again and gives it to them: an application's duty when an
    /// element posts a latency message (an encoder that has learnt its frame rate), as gst-launch does.
    @discardableResult
    public func recalculateLatency() -> Bool {
        gst_bin_recalculate_latency(cast(pointer)) != 0
    }

    /// Runs on `clock` with `baseTime`, fixed: its running time is then another pipeline's, so
    /// buffers stamped with that pipeline's running time play here when they would play there.
    public func shareTiming(clock: Clock, baseTime: ClockTime) {
        gst_pipeline_use_clock(pipelinePointer, clock.pointer)
        gst_element_set_start_time(pointer, GstClockTime.max)  // GST_CLOCK_TIME_NONE: keep the base time given
        gst_element_set_base_time(pointer, GstClockTime(baseTime.nanoseconds))
    }

    /// Going to NULL flushes the bus: end the message streams, as GStreamer drops later posts.
    func busWentFlushing() {
        if let raw = gst_pipeline_get_bus(pipelinePointer) {
            BusDispatcher.existing(on: raw)?.finishStreams()
            gst_object_unref(raw)
        }
    }
}
