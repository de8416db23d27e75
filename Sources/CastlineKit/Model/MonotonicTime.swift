import Timing

/// Monotonic nanoseconds (the HLS client times the live edge with them), re-exported so that
/// stage plugins, which depend on CastlineKit only, stamp instants on the same clock.
public typealias MonotonicTime = Timing.MonotonicTime
