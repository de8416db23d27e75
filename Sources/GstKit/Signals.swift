import CGStreamer
import CGStreamerShim

/// A connected signal handler, for `Element.disconnect`.
public struct SignalHandler: Sendable, Hashable { let id: gulong }

/// The argument of a one-argument signal.
public enum SignalArgument: Sendable {
    case none
    case pad(Pad)
    case element(Element)
    /// Some other object or pointer, by GType name.
    case other(typeName: String)
}

typealias PadHandler = @Sendable (Pad) -> Void
typealias VoidHandler = @Sendable () -> Void
typealias ArgumentHandler = @Sendable (SignalArgument) -> Void

// Signal trampolines: `instance, [arg,] user_data`. The boxes are released by GLib's GClosureNotify,
// which runs on disconnect or when the element is finalized.
private let releasePadHandler: GClosureNotify = { data, _ in CallbackBox<PadHandler>.release(data) }
private let releaseVoidHandler: GClosureNotify = { data, _ in CallbackBox<VoidHandler>.release(data) }
private let releaseArgumentHandler: GClosureNotify = { data, _ in CallbackBox<ArgumentHandler>.release(data) }

private typealias OneArgumentTrampoline = @convention(c) (gpointer?, gpointer?, gpointer?) -> Void
private typealias NoArgumentTrampoline = @convention(c) (gpointer?, gpointer?) -> Void
private typealias TwoArgumentTrampoline = @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> Void

private let padTrampoline: OneArgumentTrampoline = { _, pad, data in
    guard let pad, castline_is_a(pad, gst_pad_get_type()) != 0, let handler = CallbackBox<PadHandler>.from(data) else { return }
    handler(Pad.wrap(borrowing: pad.assumingMemoryBound(to: GstPad.self)))
}
private let voidTrampoline: NoArgumentTrampoline = { _, data in
    CallbackBox<VoidHandler>.from(data)?()
}
/// "deep-element-added": `bin, sub_bin, element, user_data`; the element goes to the handler.
private let deepElementTrampoline: TwoArgumentTrampoline = { _, _, element, data in
    guard let element, castline_is_a(element, gst_element_get_type()) != 0,
          let handler = CallbackBox<ArgumentHandler>.from(data) else { return }
    handler(.element(Element.wrap(borrowing: element.assumingMemoryBound(to: GstElement.self))))
}
private let argumentTrampoline: OneArgumentTrampoline = { _, argument, data in
    guard let handler = CallbackBox<ArgumentHandler>.from(data) else { return }
    handler(SignalArgument(argument))
}

extension SignalArgument {
    init(_ raw: gpointer?) {
        guard let raw else { self = .none; return }
        if castline_is_a(raw, gst_pad_get_type()) != 0 {
            self = .pad(Pad.wrap(borrowing: raw.assumingMemoryBound(to: GstPad.self)))
        } else if castline_is_a(raw, gst_element_get_type()) != 0 {
            self = .element(Element.wrap(borrowing: raw.assumingMemoryBound(to: GstElement.self)))
        } else if castline_is_a(raw, castline_type_object()) != 0 {
            self = .other(typeName: castline_type_name_of(raw).map { String(cString: $0) } ?? "GObject")
        } else {
            self = .other(typeName: "gpointer")
        }
    }
}

extension Element {
    private func connect(_ signal: String, _ trampoline: UnsafeRawPointer, _ data: gpointer, _ release: GClosureNotify) -> SignalHandler {
        let callback = unsafeBitCast(trampoline, to: GCallback.self)
        return SignalHandler(id: g_signal_connect_data(pointer, signal, callback, data, release, GConnectFlags(rawValue: 0)))
    }

    /// "pad-added"; runs on a streaming thread. The handler is released on disconnect or when the element dies.
    @discardableResult
    public func onPadAdded(_ handler: @escaping @Sendable (Pad) -> Void) -> SignalHandler {
        connect("pad-added", unsafeBitCast(padTrampoline, to: UnsafeRawPointer.self),
                CallbackBox<PadHandler>(handler).retainedPointer(), releasePadHandler)
    }
    @discardableResult
    public func onPadRemoved(_ handler: @escaping @Sendable (Pad) -> Void) -> SignalHandler {
        connect("pad-removed", unsafeBitCast(padTrampoline, to: UnsafeRawPointer.self),
                CallbackBox<PadHandler>(handler).retainedPointer(), releasePadHandler)
    }
    @discardableResult
    public func onNoMorePads(_ handler: @escaping @Sendable () -> Void) -> SignalHandler {
        connect("no-more-pads", unsafeBitCast(voidTrampoline, to: UnsafeRawPointer.self),
                CallbackBox<VoidHandler>(handler).retainedPointer(), releaseVoidHandler)
    }

    /// A bin's "deep-element-added": every element added anywhere inside it (a demuxer a
    /// decodebin3 plugs, say), on the thread that added it, before it is set up.
    @discardableResult
    public func onDeepElementAdded(_ handler: @escaping @Sendable (Element) -> Void) -> SignalHandler {
        let wrapped: ArgumentHandler = { argument in if case .element(let element) = argument { handler(element) } }
        return connect("deep-element-added", unsafeBitCast(deepElementTrampoline, to: UnsafeRawPointer.self),
                       CallbackBox<ArgumentHandler>(wrapped).retainedPointer(), releaseArgumentHandler)
    }

    /// Any void signal with no argument or one object/pointer argument (e.g. a bin's "element-added").
    /// Throws if the element has no such signal or its signature does not fit.
    @discardableResult
    public func connect(_ signal: String, _ handler: @escaping @Sendable (SignalArgument) -> Void) throws(GstError) -> SignalHandler {
        let id = g_signal_lookup(signal, castline_type_of(pointer))
        guard id != 0 else { throw .other("element \"\(name)\" has no signal \"\(signal)\"") }
        var query = GSignalQuery()
        g_signal_query(id, &query)
        let returnsVoid = castline_type_fundamental(query.return_type) == castline_type_none()
        guard returnsVoid, query.n_params <= 1 else {
            throw .other("signal \"\(signal)\" of \"\(name)\" has an unsupported signature")
        }
        if query.n_params == 1, let types = query.param_types {
            let fundamental = castline_type_fundamental(types[0])
            guard fundamental == castline_type_object() || fundamental == castline_type_pointer() else {
                throw .other("signal \"\(signal)\" of \"\(name)\" takes a non-object argument")
            }
        }
        let box = CallbackBox<ArgumentHandler>(handler).retainedPointer()
        let trampoline = query.n_params == 0
            ? unsafeBitCast(voidAdapter, to: UnsafeRawPointer.self)
            : unsafeBitCast(argumentTrampoline, to: UnsafeRawPointer.self)
        return connect(signal, trampoline, box, releaseArgumentHandler)
    }

    public func disconnect(_ handler: SignalHandler) {
        g_signal_handler_disconnect(pointer, handler.id)
    }
}

/// No-argument signals delivered to an ArgumentHandler as `.none`.
private let voidAdapter: NoArgumentTrampoline = { _, data in
    CallbackBox<ArgumentHandler>.from(data)?(.none)
}
