import Foundation

/// Monotonic nanoseconds (CLOCK_MONOTONIC), comparable across threads and modules of one process.
public enum MonotonicTime {
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
