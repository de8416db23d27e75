import CGStreamer
import CGStreamerShim
import Foundation
import Synchronization
import GLibSupport

/// What an error message reports, where castline words it itself: matched on GStreamer's
/// error domain and code, as its texts are translated.
public enum ErrorCause: Sendable, Equatable {
    /// GST_RESOURCE_ERROR_NO_SPACE_LEFT: a sink's disk is full.
    case diskFull
    /// GST_RESOURCE_ERROR_BUSY: a device another program holds (alsasrc, v4l2src).
    case busy
    case other
}

public enum BusMessage: Sendable {
    case error(source: String, message: String, debug: String?, cause: ErrorCause)
    case warning(source: String, message: String, debug: String?)
    case info(source: String, message: String)
    case endOfStream(source: String)
    case stateChanged(source: String, old: ElementState, new: ElementState, pending: ElementState)
    case element(source: String, structure: Structure)
    case application(source: String, structure: Structure)
    case latency(source: String)
    case buffering(source: String, percent: Int)
    case streamStart(source: String)
    case clockLost(source: String)
    case other(type: String, source: String)

    /// Name of the object that posted the message ("" if none).
    public var sourceName: String {
        switch self {
        case .error(let s, _, _, _), .warning(let s, _, _), .info(let s, _), .endOfStream(let s),
             .stateChanged(let s, _, _, _), .element(let s, _), .application(let s, _), .latency(let s),
             .buffering(let s, _), .streamStart(let s), .clockLost(let s), .other(_, let s):
            return s
        }
    }

    init(_ message: UnsafeMutablePointer<GstMessage>) {
        let source = message.pointee.src.flatMap { $0.pointee.name }.map { String(cString: $0) } ?? ""
        let type = message.pointee.type
        switch type {
        case GST_MESSAGE_ERROR, GST_MESSAGE_WARNING, GST_MESSAGE_INFO:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            switch type {
            case GST_MESSAGE_ERROR: gst_message_parse_error(message, &error, &debug)
            case GST_MESSAGE_WARNING: gst_message_parse_warning(message, &error, &debug)
            default: gst_message_parse_info(message, &error, &debug)
            }
            let text = error?.pointee.message.map { String(cString: $0) } ?? "(no message)"
            let cause: ErrorCause = switch error.map({ ($0.pointee.domain, $0.pointee.code) }) {
            case (gst_resource_error_quark(), gint(GST_RESOURCE_ERROR_NO_SPACE_LEFT.rawValue))?: .diskFull
            case (gst_resource_error_quark(), gint(GST_RESOURCE_ERROR_BUSY.rawValue))?: .busy
            default: .other
            }
            if let error { g_error_free(error) }
            let debugText = takeString(debug)
            switch type {
            case GST_MESSAGE_ERROR: self = .error(source: source, message: text, debug: debugText, cause: cause)
            case GST_MESSAGE_WARNING: self = .warning(source: source, message: text, debug: debugText)
            default: self = .info(source: source, message: text)
            }
        case GST_MESSAGE_EOS: self = .endOfStream(source: source)
        case GST_MESSAGE_STATE_CHANGED:
            var old = GST_STATE_VOID_PENDING, new = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(message, &old, &new, &pending)
            self = .stateChanged(source: source, old: ElementState(old), new: ElementState(new), pending: ElementState(pending))
        case GST_MESSAGE_ELEMENT, GST_MESSAGE_APPLICATION:
            guard let s = gst_message_get_structure(message) else {
                self = .other(type: type == GST_MESSAGE_ELEMENT ? "element" : "application", source: source)
                return
            }
            let structure = Structure(copying: s)
            self = type == GST_MESSAGE_ELEMENT ? .element(source: source, structure: structure)
                                               : .application(source: source, structure: structure)
        case GST_MESSAGE_LATENCY: self = .latency(source: source)
        case GST_MESSAGE_BUFFERING:
            var percent: gint = 0
            gst_message_parse_buffering(message, &percent)
            self = .buffering(source: source, percent: Int(percent))
        case GST_MESSAGE_STREAM_START: self = .streamStart(source: source)
        case GST_MESSAGE_CLOCK_LOST: self = .clockLost(source: source)
        default:
            self = .other(type: gst_message_type_get_name(type).map { String(cString: $0) } ?? "unknown", source: source)
        }
    }
}

/// A pipeline's message bus.
///
/// GstKit installs a sync handler on the bus as soon as a Pipeline wrapper exists, so every message is
/// seen (no GMainLoop needed). A message goes to every open `messages()` stream; when no stream is
/// open it is kept (up to 10 000) for `pop(timeout:)` or the next `messages()` call.
public final class Bus: @unchecked Sendable {  // one GstBus ref in an immutable field; shared state lives in the locked dispatcher
    let pointer: UnsafeMutablePointer<GstBus>
    init(owning pointer: UnsafeMutablePointer<GstBus>) { self.pointer = pointer }
    deinit { gst_object_unref(pointer) }

    private var dispatcher: BusDispatcher { BusDispatcher.install(on: pointer) }

    /// Every message, delivered from GStreamer's threads. The stream ends when the pipeline is set to
    /// NULL (its bus is flushed), when the bus is destroyed, or when `finish()` is called.
    public func messages() -> AsyncStream<BusMessage> { dispatcher.openStream() }

    /// The next message not taken by a stream; nil timeout waits forever.
    /// (Not gst_bus_timed_pop_filtered: the sync handler takes every message off the GstBus, so its
    /// queue stays empty; letting unclaimed messages through to it instead would race with a stream
    /// opening, as GstBus queues a passed message after the handler returns, outside any lock.)
    public func pop(timeout: Duration?) -> BusMessage? {
        dispatcher.pop(deadline: timeout.map { Date().addingTimeInterval(ClockTime($0).seconds) })
    }

    /// Posts an application message (no source object).
    public func post(application structure: Structure) {
        _ = gst_bus_post(pointer, gst_message_new_application(nil, gst_structure_copy(structure.pointer)))
    }

    /// Ends all open `messages()` streams.
    public func finish() { dispatcher.finishStreams() }
}

private let dispatcherQuark: GQuark = g_quark_from_string("castline-bus-dispatcher")
private let installLock = Mutex(())

/// Per-GstBus fan-out of messages; lives as long as the GstBus (its sync handler holds it).
final class BusDispatcher: @unchecked Sendable {  // all mutable state is guarded by `condition`
    /// A condition, not a Mutex: `pop` is a synchronous wait for the next message.
    private let condition = NSCondition()
    private var streams: [Int: AsyncStream<BusMessage>.Continuation] = [:]
    private var nextID = 0
    private var backlog: [BusMessage] = []
    private var busGone = false
    private static let backlogLimit = 10_000

    /// The bus's dispatcher, created and installed (taking over already-queued messages) on first use.
    @discardableResult
    static func install(on bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher {
        installLock.withLock { _ in installHoldingLock(on: bus) }
    }

    /// Runs under `installLock`: one dispatcher per bus.
    private static func installHoldingLock(on bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher {
        if let found = existing(on: bus) { return found }
        let dispatcher = BusDispatcher()
        while let queued = gst_bus_pop(bus) {
            dispatcher.backlog.append(BusMessage(queued))
            gst_message_unref(queued)
        }
        // qdata holds a plain pointer; the +1 belongs to the sync handler and is dropped when the bus finalizes.
        g_object_set_qdata(cast(bus, to: GObject.self), dispatcherQuark, Unmanaged.passUnretained(dispatcher).toOpaque())
        gst_bus_set_sync_handler(bus, { _, message, data in
            guard let message, let data else { return GST_BUS_PASS }
            Unmanaged<BusDispatcher>.fromOpaque(data).takeUnretainedValue().deliver(BusMessage(message))
            // A sync handler that drops a message owns it (GstBusSyncHandler's contract): without this
            // unref every message leaked, and with it the element that posted it (seen: each RTMP
            // reconnect left its whole publishing pipeline behind, 6 fds and its threads' objects).
            gst_message_unref(message)
            return GST_BUS_DROP
        }, Unmanaged.passRetained(dispatcher).toOpaque(), { data in
            guard let data else { return }
            let dispatcher = Unmanaged<BusDispatcher>.fromOpaque(data).takeRetainedValue()
            dispatcher.busDestroyed()
        })
        return dispatcher
    }

    /// Valid while the caller holds a reference to `bus`.
    static func existing(on bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher? {
        g_object_get_qdata(cast(bus, to: GObject.self), dispatcherQuark)
            .map { Unmanaged<BusDispatcher>.fromOpaque($0).takeUnretainedValue() }
    }

    func deliver(_ message: BusMessage) {
        condition.lock()
        defer { condition.unlock() }
        if streams.isEmpty {
            if backlog.count >= Self.backlogLimit { backlog.removeFirst() }
            backlog.append(message)
            condition.broadcast()
        } else {
            for continuation in streams.values { continuation.yield(message) }
        }
    }

    func openStream() -> AsyncStream<BusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: BusMessage.self, bufferingPolicy: .unbounded)
        condition.lock()
        for message in backlog { continuation.yield(message) }
        backlog.removeAll()
        guard !busGone else {
            condition.unlock()
            continuation.finish()
            return stream
        }
        let id = nextID
        nextID += 1
        streams[id] = continuation
        condition.unlock()
        continuation.onTermination = { [weak self] _ in self?.removeStream(id) }
        return stream
    }

    private func removeStream(_ id: Int) {
        condition.lock()
        streams[id] = nil
        condition.unlock()
    }

    func pop(deadline: Date?) -> BusMessage? {
        condition.lock()
        defer { condition.unlock() }
        while backlog.isEmpty {
            if busGone { return nil }
            if let deadline {
                if !condition.wait(until: deadline) && backlog.isEmpty { return nil }
            } else {
                condition.wait()
            }
        }
        return backlog.removeFirst()
    }

    func finishStreams() {
        condition.lock()
        let ending = Array(streams.values)
        streams.removeAll()
        condition.unlock()
        for continuation in ending { continuation.finish() }  // outside the lock: onTermination takes it
    }

    private func busDestroyed() {
        condition.lock()
        busGone = true
        condition.broadcast()
        condition.unlock()
        finishStreams()
    }
}
