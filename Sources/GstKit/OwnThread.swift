import Foundation

/// Runs `work` on a thread of its own and waits for it without holding one of the cooperative
/// pool's few threads: a GStreamer state change may block (a device opening, a bin taking its
/// children down), as a blocking socket call does, and neither belongs on the pool.
public func onOwnThread<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }
    }
    return try result.get()
}
