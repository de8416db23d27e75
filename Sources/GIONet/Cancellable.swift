import CGStreamer
import Foundation

/// A GCancellable handed to a blocking GIO call, with the pointer sendable to the thread that makes it.
public struct Cancellable: @unchecked Sendable {  // GCancellable is thread-safe; unreffed once, by `blocking`
    public let pointer: UnsafeMutablePointer<GCancellable>

    /// Runs `work` (blocking GIO calls given this cancellable) on a thread of its own, so neither
    /// an actor nor the cooperative pool waits on the network; cancelling the task cancels the
    /// call at once (GIO returns G_IO_ERROR_CANCELLED), and `CancellationError` is thrown.
    public static func blocking<T: Sendable>(_ work: @escaping @Sendable (Cancellable) throws(GIONetError) -> T) async throws -> T {
        guard let made = g_cancellable_new() else { throw GIONetError("cannot create a GCancellable") }
        let cancellable = Cancellable(pointer: made)
        defer { g_object_unref(made) }
        let result: Result<T, GIONetError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    do throws(GIONetError) { continuation.resume(returning: .success(try work(cancellable))) }
                    catch { continuation.resume(returning: .failure(error)) }
                }
            }
        } onCancel: {
            g_cancellable_cancel(cancellable.pointer)
        }
        if Task.isCancelled { throw CancellationError() }
        return try result.get()
    }
}
