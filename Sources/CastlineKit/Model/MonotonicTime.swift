import HLS

/// Monotonic nanoseconds, from the HLS client (which times the live edge with them), re-exported so
/// that parts depending only on CastlineKit (the delay stage) stamp instants on the same clock.
public typealias MonotonicTime = HLS.MonotonicTime
