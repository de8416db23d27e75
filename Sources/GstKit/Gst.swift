import CGStreamer
import CGStreamerShim
import Foundation
import Synchronization
import GLibSupport

/// Process-wide GStreamer entry points.
public enum Gst {
    /// `gst_init(nil, nil)` exactly once; safe to call from any thread, any number of times.
    public static func initialize() { _ = gstInitialized }

    /// e.g. "GStreamer 1.22.0".
    public static var versionString: String {
        initialize()
        return takeString(gst_version_string()) ?? "GStreamer"
    }

    public static func hasElement(_ factory: String) -> Bool {
        initialize()
        guard let found = gst_element_factory_find(factory) else { return false }
        gst_object_unref(UnsafeMutableRawPointer(found))
        return true
    }

    /// Name of the plugin that provides the element factory, if the factory exists.
    public static func pluginName(ofElement factory: String) -> String? {
        initialize()
        guard let found = gst_element_factory_find(factory) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(found)) }
        return gst_plugin_feature_get_plugin_name(found).map { String(cString: $0) }
    }

    /// A bin from a launch description; unlinked pads become ghost pads when `ghostUnlinkedPads`.
    public static func parseBin(_ description: String, ghostUnlinkedPads: Bool = true) throws(GstError) -> Bin {
        initialize()
        var error: UnsafeMutablePointer<GError>?
        let made = gst_parse_bin_from_description(description, ghostUnlinkedPads ? 1 : 0, &error)
        let element = try adoptParsed(made.map { UnsafeMutablePointer<GstElement>(OpaquePointer($0)) }, error)
        guard let bin = element as? Bin else { throw .parse("\"\(description)\" did not produce a bin") }
        return bin
    }

    /// A whole pipeline from a launch description (tests and debugging).
    /// A description that yields a single element is wrapped in a new pipeline.
    public static func parseLaunch(_ description: String) throws(GstError) -> Pipeline {
        initialize()
        var error: UnsafeMutablePointer<GError>?
        let made = gst_parse_launch(description, &error)
        let element = try adoptParsed(made, error)
        if let pipeline = element as? Pipeline { return pipeline }
        let pipeline = Pipeline()
        try pipeline.add(element)
        return pipeline
    }

    /// Any GError counts as failure, even when GStreamer also returned a partial result.
    private static func adoptParsed(_ made: UnsafeMutablePointer<GstElement>?,
                                    _ error: UnsafeMutablePointer<GError>?) throws(GstError) -> Element {
        if let error {
            let message = error.pointee.message.map { String(cString: $0) } ?? "parse error"
            g_error_free(error)
            if let made { gst_object_unref(made) }
            throw .parse(message)
        }
        guard let made else { throw .parse("GStreamer returned no element") }
        return Element.wrap(sinking: made)
    }
}

/// GStreamer's CRITICAL messages in this process (a broken rule: an element disposed while it
/// plays, a call with a bad argument), each still printed as GLib prints it. Tests compare the
/// count before and after a run: a critical is a defect even when the run goes on.
public enum GstCriticals {
    private static let count = Atomic<Int>(0)
    private static let installed: Void = {
        g_log_set_handler("GStreamer", GLogLevelFlags(G_LOG_LEVEL_CRITICAL.rawValue), { domain, level, message, _ in
            GstCriticals.count.add(1, ordering: .relaxed)
            g_log_default_handler(domain, level, message, nil)
        }, nil)
    }()

    /// Starts counting (once per process; later calls do nothing).
    public static func watch() { _ = installed }
    public static var seen: Int { count.load(ordering: .relaxed) }
}

private let gstInitialized: Void = {
    // OpenAL Soft, one of autoaudiosink's candidates, prints its own errors to stderr ("AL lib: (EE)
    // ... Could not open playback device") unless told not to; castline says what failed itself.
    setenv("ALSOFT_LOGLEVEL", "0", 0)
    gst_init(nil, nil)
}()

public enum GstError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingElement(factory: String)
    case unknownProperty(element: String, property: String)
    case invalidPropertyValue(element: String, property: String, value: String)
    case parse(String)
    case link(from: String, to: String, reason: String)
    case stateChange(element: String, to: ElementState)
    case caps(String)
    /// No decoder for a stream: GStreamer's description of what is missing, and the stream's caps.
    case missingDecoder(description: String, caps: String)
    case other(String)

    public var description: String {
        switch self {
        case .missingElement(let factory): return "no GStreamer element \"\(factory)\""
        case .unknownProperty(let element, let property):
            return "element \"\(element)\" has no property \"\(property)\""
        case .invalidPropertyValue(let element, let property, let value):
            return "invalid value \"\(value)\" for property \"\(property)\" of element \"\(element)\""
        case .parse(let message): return "pipeline description: \(message)"
        case .link(let from, let to, let reason): return "cannot link \(from) to \(to): \(reason)"
        case .stateChange(let element, let to): return "element \"\(element)\" failed to change state to \(to)"
        case .caps(let message): return "caps: \(message)"
        case .missingDecoder(let description, _): return "no GStreamer \(description)"
        case .other(let message): return message
        }
    }
}

/// A GStreamer clock time in nanoseconds; GST_CLOCK_TIME_NONE is represented as `nil` (`ClockTime?`).
public struct ClockTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public init(seconds: Double) { self.nanoseconds = UInt64(max(0, (seconds * 1e9).rounded())) }
    public init(_ duration: Duration) {
        let (s, atto) = duration.components
        self.nanoseconds = s < 0 ? 0 : UInt64(s) * 1_000_000_000 + UInt64(max(0, atto) / 1_000_000_000)
    }
    /// nil for GST_CLOCK_TIME_NONE.
    init?(raw: GstClockTime) {
        guard raw != GstClockTime.max else { return nil }
        self.nanoseconds = UInt64(raw)
    }

    public static let zero = ClockTime(nanoseconds: 0)
    public var seconds: Double { Double(nanoseconds) / 1e9 }
    public var duration: Duration { .nanoseconds(Int64(clamping: nanoseconds)) }
    public static func < (a: ClockTime, b: ClockTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: ClockTime, b: ClockTime) -> ClockTime { ClockTime(nanoseconds: a.nanoseconds &+ b.nanoseconds) }

    /// GStreamer's own H:MM:SS.nnnnnnnnn form.
    public var description: String {
        let ns = nanoseconds
        let h = ns / 3_600_000_000_000, m = ns / 60_000_000_000 % 60, s = ns / 1_000_000_000 % 60
        let frac = String(ns % 1_000_000_000)
        return "\(h):\(m < 10 ? "0" : "")\(m):\(s < 10 ? "0" : "")\(s).\(String(repeating: "0", count: 9 - frac.count))\(frac)"
    }
}

extension Optional where Wrapped == ClockTime {
    /// GST_CLOCK_TIME_NONE for nil.
    var raw: GstClockTime { self.map { GstClockTime($0.nanoseconds) } ?? GstClockTime.max }
}

extension Optional where Wrapped == Duration {
    /// A blocking timeout: nil waits forever (GST_CLOCK_TIME_NONE).
    var clockTimeout: GstClockTime { map { GstClockTime(ClockTime($0).nanoseconds) } ?? GstClockTime.max }
}

public enum ElementState: Sendable, Hashable, CustomStringConvertible {
    case voidPending, null, ready, paused, playing

    init(_ raw: GstState) {
        switch raw {
        case GST_STATE_NULL: self = .null
        case GST_STATE_READY: self = .ready
        case GST_STATE_PAUSED: self = .paused
        case GST_STATE_PLAYING: self = .playing
        default: self = .voidPending
        }
    }
    var raw: GstState {
        switch self {
        case .voidPending: GST_STATE_VOID_PENDING
        case .null: GST_STATE_NULL
        case .ready: GST_STATE_READY
        case .paused: GST_STATE_PAUSED
        case .playing: GST_STATE_PLAYING
        }
    }
    public var description: String {
        switch self {
        case .voidPending: "VOID_PENDING"
        case .null: "NULL"
        case .ready: "READY"
        case .paused: "PAUSED"
        case .playing: "PLAYING"
        }
    }
}

public enum StateChangeResult: Sendable {
    case success, async, noPreroll, failure

    init(_ raw: GstStateChangeReturn) {
        switch raw {
        case GST_STATE_CHANGE_SUCCESS: self = .success
        case GST_STATE_CHANGE_ASYNC: self = .async
        case GST_STATE_CHANGE_NO_PREROLL: self = .noPreroll
        default: self = .failure
        }
    }
}

public enum FlowResult: Sendable {
    case ok, eos, flushing, notLinked, error

    init(_ raw: GstFlowReturn) {
        switch raw {
        case GST_FLOW_OK: self = .ok
        case GST_FLOW_EOS: self = .eos
        case GST_FLOW_FLUSHING: self = .flushing
        case GST_FLOW_NOT_LINKED: self = .notLinked
        default: self = .error
        }
    }
    var raw: GstFlowReturn {
        switch self {
        case .ok: GST_FLOW_OK
        case .eos: GST_FLOW_EOS
        case .flushing: GST_FLOW_FLUSHING
        case .notLinked: GST_FLOW_NOT_LINKED
        case .error: GST_FLOW_ERROR
        }
    }
}

// MARK: - Internal helpers

/// Name of any GstObject (NULL names become "").
func objectName(_ object: UnsafeMutableRawPointer) -> String {
    takeString(gst_object_get_name(object.assumingMemoryBound(to: GstObject.self))) ?? ""
}

/// Carries a Swift value through a C `gpointer user_data` (retained until GLib's destroy notify).
final class CallbackBox<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
    func retainedPointer() -> gpointer { Unmanaged.passRetained(self).toOpaque() }
    static func from(_ pointer: gpointer?) -> Value? {
        guard let pointer else { return nil }
        return Unmanaged<CallbackBox<Value>>.fromOpaque(pointer).takeUnretainedValue().value
    }
    static func release(_ pointer: gpointer?) {
        guard let pointer else { return }
        Unmanaged<CallbackBox<Value>>.fromOpaque(pointer).release()
    }
}
