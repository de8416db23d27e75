import CastlineKit

/// What the probe copies out of one buffer: times in nanoseconds, arrival on
/// a monotonic clock. A plain value, so the meter can be tested without GStreamer.
struct BufferFacts: Sendable {
    var pts: UInt64?
    var dts: UInt64?
    var duration: UInt64?
    var size: Int
    var isDiscont = false
    var isGap = false
    var arrival: UInt64
    /// What the run's time-shifts held back as it passed, in ns: held back more than for the buffer
    /// before (a pause of play-out), the time between the two is the pause, not frames lost.
    var held: Int64?
    /// The pipeline's base time as it passed, in ns: later than for the buffer before, the pipeline
    /// was paused between the two for that long (it resumes with its base time moved on).
    var baseTime: UInt64?
}

/// The counters of one stream at one stats stage. Buffers are recorded from
/// the streaming thread; `snapshot` is taken from the stage's timer and
/// starts the next interval. The caller serialises the two (a Mutex).
struct StreamMeter: Sendable {
    let stream: StreamKind
    /// How far back `bitrate_10s_kbps` looks.
    static let longWindow: UInt64 = 10_000_000_000

    private(set) var buffers: UInt64 = 0
    private(set) var bytes: UInt64 = 0
    private(set) var gaps: UInt64 = 0
    private(set) var discontinuities: UInt64 = 0
    private(set) var lateFrames: UInt64 = 0
    private(set) var droppedFrames: UInt64 = 0
    private(set) var lastPTS: UInt64?
    private(set) var ended = false

    // The previous buffer, for spacing: decode time when there is one, so
    // B-frames (presented out of order) do not read as late.
    private var previousArrival: UInt64?
    private var previousTime: UInt64?
    private var previousHeld: Int64?
    private var previousBaseTime: UInt64?

    // The current interval.
    private var intervalStart: UInt64?
    private var intervalBytes: UInt64 = 0
    private var intervalBuffers: UInt64 = 0
    /// Media time the interval's buffers cover (their durations), while every one had a duration.
    private var intervalMedia: UInt64 = 0
    private var intervalFirstTime: UInt64?
    private var intervalEnd: UInt64 = 0
    private var intervalPaused: UInt64 = 0
    private var intervalAllTimed = true
    private var jitterSum: Double = 0
    private var jitterCount = 0
    private var level = AudioLevel.empty
    private var measuresLevel = false
    /// Completed intervals: when each ended, how long it lasted, its bytes.
    private var history: [(end: UInt64, length: UInt64, bytes: UInt64)] = []

    init(stream: StreamKind) {
        self.stream = stream
    }

    var hasStarted: Bool { intervalStart != nil }

    mutating func record(_ buffer: BufferFacts, level bufferLevel: AudioLevel? = nil) {
        if intervalStart == nil { intervalStart = buffer.arrival }
        buffers += 1
        bytes += UInt64(buffer.size)
        intervalBuffers += 1
        intervalBytes += UInt64(buffer.size)
        if let duration = buffer.duration, duration > 0 { intervalMedia += duration } else { intervalAllTimed = false }
        if buffer.isGap { gaps += 1 }
        // The first buffer of a stream is always flagged; only later ones are news.
        if buffer.isDiscont, buffers > 1 { discontinuities += 1 }
        if let pts = buffer.pts { lastPTS = pts }
        if let bufferLevel {
            level.add(bufferLevel)
            measuresLevel = true
        }
        guard let time = buffer.dts ?? buffer.pts else { return }
        var heldLonger: UInt64 = 0
        if let previousTime, let previousArrival {
            heldLonger = UInt64(max(0, (buffer.held ?? 0) - (previousHeld ?? buffer.held ?? 0)))
            // A pipeline paused between the two (its base time moved on): its time did not run, nor
            // does the arrival's (a base time that went back is a new start, not a pause).
            let gap = buffer.arrival >= previousArrival ? buffer.arrival - previousArrival : 0
            let paused = buffer.baseTime.flatMap { now in previousBaseTime.map { now > $0 ? now - $0 : 0 } } ?? 0
            spacing(time: time, previousTime: previousTime, arrival: buffer.arrival - min(paused, gap),
                    previousArrival: previousArrival, duration: buffer.duration, paused: heldLonger)
        }
        // The stretch of media time the interval covers (for its frame rate), less a time-shift's pause in it.
        intervalFirstTime = intervalFirstTime ?? time
        intervalEnd = max(intervalEnd, time + (buffer.duration ?? 0))
        intervalPaused += heldLonger
        previousTime = time
        previousArrival = buffer.arrival
        previousHeld = buffer.held
        previousBaseTime = buffer.baseTime
    }

    /// Jitter, late and dropped frames from the spacing of two buffers; `paused`: how much longer
    /// than for the one before a time-shift held this one back (no frames are missing for it).
    private mutating func spacing(
        time: UInt64, previousTime: UInt64, arrival: UInt64, previousArrival: UInt64, duration: UInt64?, paused: UInt64
    ) {
        guard time >= previousTime else {
            if stream == .video { lateFrames += 1 }
            return
        }
        let mediaSpacing = Double(time - previousTime)
        let arrivalSpacing = Double(arrival) - Double(previousArrival)
        let deviation = arrivalSpacing - mediaSpacing
        jitterSum += abs(deviation)
        jitterCount += 1
        guard stream == .video, mediaSpacing > 0 else { return }
        // Later than one frame's spacing behind where it should have arrived.
        if deviation > mediaSpacing { lateFrames += 1 }
        let missing = mediaSpacing - Double(paused)
        if let duration, duration > 0, missing > 1.5 * Double(duration) {
            droppedFrames += UInt64((missing / Double(duration)).rounded()) - 1
        }
    }

    /// The level of decoded samples of what was recorded encoded (measured after the decoder that follows).
    mutating func recordLevel(_ bufferLevel: AudioLevel) {
        level.add(bufferLevel)
        measuresLevel = true
    }

    mutating func recordGapEvent() { gaps += 1 }
    mutating func recordEnd() { ended = true }

    /// The figures that count since the stream began (what a successor in a swap carries on from).
    static let cumulative: Set<String> = ["buffers", StatsStage.bytes.name, "gaps", "discontinuities", "late_frames",
                                          "dropped_frames", StatsStage.silences.name]

    /// The counts since this meter began, under their figure names.
    var counts: [String: Double] {
        var counts = ["buffers": Double(buffers), StatsStage.bytes.name: Double(bytes), "gaps": Double(gaps),
                      "discontinuities": Double(discontinuities)]
        if stream == .video { (counts["late_frames"], counts["dropped_frames"]) = (Double(lateFrames), Double(droppedFrames)) }
        return counts
    }

    /// Buffers came since the last snapshot.
    var hasNewBuffers: Bool { intervalBuffers > 0 }

    /// Figures for the interval ending `now` (monotonic nanoseconds); starts the next one.
    mutating func snapshot(now: UInt64) -> [String: Double] {
        let start = intervalStart ?? now
        let length = now > start ? now - start : 0
        // Bytes per second of media carried, so a burst or a late timer does not skew the figure;
        // wall time when buffers carry no duration (or none came: then the rate is 0 either way).
        let mediaLength = intervalAllTimed && intervalMedia > 0 ? intervalMedia : length
        history.append((end: now, length: mediaLength, bytes: intervalBytes))
        history.removeAll { now - $0.end >= Self.longWindow }
        var figures: [String: Double] = [
            "buffers": Double(buffers),
            StatsStage.bytes.name: Double(bytes),
            "bitrate_kbps": Self.kbps(bytes: intervalBytes, nanoseconds: mediaLength),
            "throughput_kbps": Self.kbps(bytes: intervalBytes, nanoseconds: length),
            "bitrate_10s_kbps": Self.kbps(bytes: history.reduce(0) { $0 + $1.bytes },
                                          nanoseconds: history.reduce(0) { $0 + $1.length }),
            "gaps": Double(gaps),
            "discontinuities": Double(discontinuities),
        ]
        if let lastPTS { figures["position_s"] = Double(lastPTS) / 1e9 }
        if jitterCount > 0 { figures["jitter_ms"] = jitterSum / Double(jitterCount) / 1e6 }
        if stream == .video {
            // Per second of the media time the frames span (a missing frame lowers it), not of the
            // wall clock: a source's read-ahead (an HLS start), or an encoder's last frames at the
            // end, come faster than they play.
            let span = intervalFirstTime.map { intervalEnd > $0 ? intervalEnd - $0 : 0 } ?? 0
            let frameTime = span > intervalPaused ? span - intervalPaused : length
            figures[StatsStage.frameRate.name] = frameTime > 0 ? Double(intervalBuffers) * 1e9 / Double(frameTime) : 0
            figures["late_frames"] = Double(lateFrames)
            figures["dropped_frames"] = Double(droppedFrames)
        }
        // An interval without audio has no level: left out (not the floor, which silence reads as,
        // nor the last level).
        if measuresLevel, let rms = level.rmsDBFS {
            figures[StatsStage.level.name] = rms
            figures["peak_dbfs"] = level.peakDBFS ?? rms
        }
        intervalStart = now
        intervalBytes = 0
        intervalBuffers = 0
        intervalMedia = 0
        intervalFirstTime = nil
        intervalEnd = 0
        intervalPaused = 0
        intervalAllTimed = true
        jitterSum = 0
        jitterCount = 0
        level = .empty
        return figures
    }

    static func kbps(bytes: UInt64, nanoseconds: UInt64) -> Double {
        guard nanoseconds > 0 else { return 0 }
        return Double(bytes) * 8 / (Double(nanoseconds) / 1e9) / 1000
    }
}
