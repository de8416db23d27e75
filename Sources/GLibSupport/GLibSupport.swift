import CGStreamer
import Synchronization

// What GstKit and GIONet both need from GLib's C API: its strings, its casts, and a lock
// for the little state their wrappers share with GLib's threads.

/// Copies and g_free()s a string GLib handed over with transfer full.
@inlinable
public func takeString(_ raw: UnsafeMutablePointer<gchar>?) -> String? {
    guard let raw else { return nil }
    defer { g_free(raw) }
    return String(cString: raw)
}

/// Reinterprets one GObject-derived C pointer as another (the C casts GST_ELEMENT(), G_IO_STREAM()...).
@inlinable @inline(__always)
public func cast<T, U>(_ pointer: UnsafeMutablePointer<T>, to: U.Type = U.self) -> UnsafeMutablePointer<U> {
    UnsafeMutablePointer<U>(OpaquePointer(pointer))
}

@inlinable @inline(__always)
public func cast<U>(_ pointer: UnsafeMutableRawPointer, to: U.Type = U.self) -> UnsafeMutablePointer<U> {
    pointer.assumingMemoryBound(to: U.self)
}

/// A value behind a lock, shared by reference (a wrapper and the callbacks GLib calls hold the same one).
public final class Protected<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<R: Sendable>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }
}
