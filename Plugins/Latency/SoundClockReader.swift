import CastlineKit
import Foundation

/// Reads the test signal's sound clock (`SoundClock`) from decoded samples, one channel: finds
/// each beep's start to a fraction of a millisecond, then the mark number that follows it.
///
/// The beep is found by its pitch (twice the tone's) in windows of 2.5 ms. The window it starts
/// in holds it only in part, and a tone's magnitude grows with the part it fills, so the start
/// is placed within that window by its magnitude against the next, full one.
///
/// Levels are judged against the tone's own, as heard in the last windows of plain tone: the
/// signal may come at any volume, and gain or a re-encode may have moved it.
struct SoundClockReader {
    /// A beep read: the low 10 bits of its mark's number, and the running time (ns) it began at.
    struct Mark: Equatable {
        var low: Int
        var start: UInt64
    }

    let rate: Int
    let tone: Double
    private let window: Int
    /// Samples of the window being filled, and its first sample's running time.
    private var pending: [Float] = []
    private var pendingStart: UInt64 = 0
    /// The last windows' beep magnitudes and the running times they end at.
    private var recent: [(magnitude: Double, end: UInt64)] = []
    /// The tone's magnitude in the last windows of plain tone: their largest is the level the
    /// beep and the code are judged against (a window the code or beep fills in part reads less).
    private var plainTone: [Double] = []
    private var toneLevel: Double { plainTone.max() ?? 0 }
    /// Below this (-60 dBFS) there is no tone to read a clock from.
    private static let quietest = 0.001
    /// Since when (running time, ns) the sound has run without a gap, and where it reaches.
    private var soundSince: UInt64?
    private var soundEnd: Double = 0
    /// A beep starts in a recent window: the windows since then wait for the next, full one.
    private var rising: Bool = false
    /// Not before then: a beep lasts 100 ms and its code 330 more.
    private var quietUntil: UInt64 = 0
    /// After a beep's start: where it began, the frames from then to the first one gathered,
    /// and the frames gathered since (the code's slots are timed from the start).
    private var code: (start: UInt64, skipped: Int, samples: [Float])?

    init(rate: Int, tone: Double) {
        self.rate = rate
        self.tone = tone
        // Two of the tone's periods (2 ms at 1 kHz): the tone, its beep and its code's pitches
        // then fill whole cycles, and the tone does not leak into the beep's magnitude.
        window = max(16, Int((2 * Double(rate) / tone).rounded()))
    }

    /// Feeds samples starting at running time `start` (ns); returns a mark when one completes.
    mutating func feed(_ samples: UnsafeBufferPointer<Float>, channels: Int, start: UInt64) -> [Mark] {
        var marks: [Mark] = []
        let frames = samples.count / max(1, channels)
        let nanosecondsPerFrame = 1e9 / Double(rate)
        // A gap in time (a discontinuity): what was gathered no longer lines up.
        if soundSince != nil, abs(Double(start) - soundEnd) > 2e6 {
            pending.removeAll(keepingCapacity: true)
            recent.removeAll()
            plainTone.removeAll()
            code = nil
            rising = false
            soundSince = nil
        }
        if soundSince == nil { soundSince = start }
        soundEnd = Double(start) + Double(frames) * nanosecondsPerFrame
        for frame in 0..<frames {
            let value = samples[frame * channels]
            if pending.isEmpty { pendingStart = start + UInt64(Double(frame) * nanosecondsPerFrame) }
            pending.append(value)
            if code != nil { code?.samples.append(value) }
            if let gathered = code, Double(gathered.skipped + gathered.samples.count) >= SoundClock.codeEnd * Double(rate) {
                if let mark = decode(gathered.samples, skipped: gathered.skipped, start: gathered.start) { marks.append(mark) }
                code = nil
            }
            if pending.count == window {
                windowDone()
                pending.removeAll(keepingCapacity: true)
            }
        }
        return marks
    }

    /// One window full: is a beep starting?
    private mutating func windowDone() {
        let end = pendingStart + UInt64(Double(window) * 1e9 / Double(rate))
        let magnitude = Self.magnitude(pending[...], frequency: 2 * tone, rate: rate)
        recent.append((magnitude, end))
        if recent.count > 3 { recent.removeFirst() }
        let toneMagnitude = Self.magnitude(pending[...], frequency: tone, rate: rate)
        if toneMagnitude > Self.quietest, magnitude < 0.25 * toneMagnitude {
            plainTone.append(toneMagnitude)
            if plainTone.count > 8 { plainTone.removeFirst() }
        }
        let level = toneLevel
        guard end > quietUntil, level > Self.quietest else { return }
        if rising {
            rising = false
            // The full window's magnitude is the beep's: the earlier windows hold it in part.
            let full = max(magnitude, recent.dropLast().map(\.magnitude).max() ?? 0)
            guard full > 0.67 * level else { return }
            let windowNanoseconds = Double(window) * 1e9 / Double(rate)
            for earlier in recent.dropLast() where earlier.magnitude / full > 0.05 {
                let part = min(1, earlier.magnitude / full)
                let start = UInt64(Double(earlier.end) - part * windowNanoseconds)
                // Only a beep seen rising out of the tone has a known start: one already on when
                // the sound began (or after a gap) would time the code's slots wrongly, and a
                // slot late reads as another number.
                guard let since = soundSince, start >= since + UInt64(windowNanoseconds) else {
                    quietUntil = end + UInt64(SoundClock.codeEnd * 1e9)
                    return
                }
                code = (start, Int(((Double(end) - Double(start)) / 1e9 * Double(rate)).rounded()), [])
                quietUntil = start + UInt64(SoundClock.codeEnd * 1e9)
                return
            }
        } else if magnitude > 0.5 * level {
            rising = true
        }
    }

    /// The mark number in a beep's code, or nil when it does not read or check.
    private func decode(_ samples: [Float], skipped: Int, start: UInt64) -> Mark? {
        var bits: [Bool?] = []
        // The code is written at the tone's level: a slot under a sixth of it is not heard.
        let heard = toneLevel / 6
        for slot in 0..<SoundClock.slots {
            // The middle 20 ms of each 30 ms slot, counted from the beep's start.
            let from = Int((SoundClock.codeStart + Double(slot) * SoundClock.slot + 0.005) * Double(rate)) - skipped
            let to = from + Int(0.020 * Double(rate))
            guard from >= 0, to <= samples.count else { return nil }
            let zero = Self.magnitude(samples[from..<to], frequency: 3 * tone, rate: rate)
            let one = Self.magnitude(samples[from..<to], frequency: 4 * tone, rate: rate)
            if max(zero, one) > heard, max(zero, one) > 2 * min(zero, one) {
                bits.append(one > zero)
            } else if max(zero, one) <= heard, Self.magnitude(samples[from..<to], frequency: tone, rate: rate) <= heard {
                // Silence (an encoder's dropout): unheard, and the parity may still tell it.
                bits.append(nil)
            } else {
                // Both pitches, or the plain tone: not a slot of this code.
                return nil
            }
        }
        return SoundClock.number(from: bits).map { Mark(low: $0, start: start) }
    }

    /// The amplitude of `frequency` in `samples` (Goertzel): a full-length sine of amplitude A reads A.
    static func magnitude(_ samples: ArraySlice<Float>, frequency: Double, rate: Int) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / Double(rate))
        var previous = 0.0, beforePrevious = 0.0
        for sample in samples {
            let current = Double(sample) + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        return 2 * max(0, power).squareRoot() / Double(max(1, samples.count))
    }
}
