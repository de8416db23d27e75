import Foundation

/// Runs `work` on a thread of its own and waits for it without holding one of the cooperative
/// pool's few threads: a GStreamer state change may block (a device opening, a bin taking its
/// children down), and does not belong on the pool.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
