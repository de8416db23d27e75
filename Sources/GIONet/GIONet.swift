import CGStreamer
import Synchronization

/// What went wrong, as one line a user can act on (GIO's own reason where it gave one).
public struct GIONetError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ line: String) { description = line }
}

/// A value behind a lock, shared by reference (the relay and its core hold the same failure handler).
final class Protected<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }
}

/// Copies and g_free()s a string GLib handed over with transfer full.
func takeString(_ raw: UnsafeMutablePointer<gchar>?) -> String? {
    guard let raw else { return nil }
    defer { g_free(raw) }
    return String(cString: raw)
}

/// Reinterprets one GObject-derived C pointer as another (the C casts G_IO_STREAM(), G_TLS_CONNECTION()...).
@inline(__always)
func cast<T, U>(_ pointer: UnsafeMutablePointer<T>, to: U.Type = U.self) -> UnsafeMutablePointer<U> {
    UnsafeMutablePointer<U>(OpaquePointer(pointer))
}
