import Foundation
import Synchronization

/// A serial executor with a thread of its own, for the actor that drives one pipeline:
/// GStreamer's state changes block (a sink prerolling, a bin taking its children down), and
/// they run here, never on the cooperative pool nor under a lock.
public final class PipelineThread: SerialExecutor {
    private let jobs = JobQueue()

    public init(name: String) {
        let thread = Thread { [jobs] in jobs.run() }
        thread.name = "castline \(name)"
        thread.start()
    }

    deinit { jobs.close() }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // Held until the job is done: a job may let go of the last reference to the actor, and
        // so to this executor, which the runtime still uses as the job ends.
        jobs.push { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
    }
}

/// First in, first out, run on one thread until closed.
private final class JobQueue: Sendable {
    private let pending = Mutex<(jobs: [@Sendable () -> Void], closed: Bool)>(([], false))
    private let signal = DispatchSemaphore(value: 0)

    func push(_ job: @escaping @Sendable () -> Void) {
        pending.withLock { $0.jobs.append(job) }
        signal.signal()
    }

    func close() {
        pending.withLock { $0.closed = true }
        signal.signal()
    }

    func run() {
        while true {
            signal.wait()
            let next: (@Sendable () -> Void)? = pending.withLock { state in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            if let next {
                next()
            } else if pending.withLock({ $0.closed }) {
                return
            }
        }
    }
}
