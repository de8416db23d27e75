import Timing

/// Monotonic nanoseconds (the HLS client times the live edge with them), re-exported so that
/// parts depending only on CastlineKit (the delay stage) stamp instants on the same clock.
public typealias MonotonicTime = Timing.MonotonicTime
