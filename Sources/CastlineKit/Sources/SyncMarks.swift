import Foundation
import GstKit
import Synchronization

/// The A/V sync marks of the test source: a beep and a white flash at the start
/// of every `interval` of wall-clock time, placed by buffer timestamp so audio
/// and video mark the very same instant, and the wall-clock time and frame
/// count burnt into the picture. Machine-readable too (see `PictureClock` and
/// `SoundClock`): the latency stage reads both back.
final class SyncMarks: Sendable {
    let interval: Duration
    /// `interval` in seconds, as the per-sample arithmetic wants it.
    private let period: Double
    let length: Duration = .milliseconds(100)
    let beepFrequency: Double
    /// The sound's marks come this much after the picture's (`av-offset`), in seconds.
    let audioLate: Double
    /// The machine-readable clock: the picture's stripe and the sound's mark numbers.
    let clock: Bool
    /// Wall-clock seconds at running time zero, fixed by the first buffer seen.
    private let origin = Mutex<Double?>(nil)
    private let frames = Mutex(0)

    init(interval: Duration, beepFrequency: Double, audioLate: Double = 0, clock: Bool = true) {
        self.interval = interval
        period = interval.seconds
        self.beepFrequency = beepFrequency
        self.audioLate = audioLate
        self.clock = clock
    }

    /// Wall-clock seconds of a buffer timestamp (live sources stamp with running time).
    func wallTime(_ pts: ClockTime) -> Double {
        let offset = origin.withLock { origin -> Double in
            if let origin { return origin }
            let now = Date().timeIntervalSince1970 - pts.seconds
            origin = now
            return now
        }
        return offset + pts.seconds
    }

    /// Seconds since the last mark began, at wall time `wall`.
    private func sinceMark(_ wall: Double) -> Double {
        wall.truncatingRemainder(dividingBy: period)
    }

    func isMarked(_ pts: ClockTime) -> Bool {
        interval > .zero && sinceMark(wallTime(pts)) < length.seconds
    }

    // MARK: Audio

    /// Writes the beep, then the mark's number (`SoundClock`), over the tone where a buffer of
    /// interleaved F32 samples overlaps a mark; `av-offset` later than the picture's marks.
    func addBeep(_ info: inout ProbeInfo, rate: Int, channels: Int, volume: Double) {
        guard interval > .zero, let buffer = info.buffer, let pts = buffer.pts else { return }
        let count = buffer.size / (4 * channels)
        let start = wallTime(pts) - audioLate
        let end = start + Double(count) / Double(rate)
        // Quick reject: no mark's beep or code starts or lasts within this buffer.
        let phase = sinceMark(start)
        let lasts = clock ? SoundClock.codeEnd : SoundClock.beep
        guard phase < lasts || phase + (end - start) >= period else { return }
        let startTime = pts.seconds
        let tone = beepFrequency / 2
        // The mark's code bits, made once per mark, not per sample.
        var (markNumber, bits) = (Int64.min, [Bool]())
        let beepLevel = SoundClock.beepLevel(volume: volume)
        _ = info.withWritableBuffer { writable in
            writable.withUnsafeMutableBytes { raw in
                let samples = raw.bindMemory(to: Float.self)
                for frame in 0..<count {
                    let t = startTime + Double(frame) / Double(rate)
                    let wall = start + (t - startTime)
                    let number = Int64((wall / period).rounded(.down))
                    if number != markNumber { (markNumber, bits) = (number, SoundClock.bits(number)) }
                    guard let multiple = SoundClock.multiple(at: sinceMark(wall), bits: bits), clock || multiple == 2 else { continue }
                    // The beep louder than the tone, the code at the tone's level.
                    let value = Float((multiple == 2 ? beepLevel : volume) * sin(2 * Double.pi * tone * multiple * t))
                    for channel in 0..<channels where frame * channels + channel < samples.count {
                        samples[frame * channels + channel] = value
                    }
                }
            }
        }
    }

    // MARK: Video

    /// The text burnt into the next frame: wall-clock time (UTC, ms) and frame number.
    func caption(_ pts: ClockTime) -> String {
        let number = frames.withLock { count -> Int in
            count += 1
            return count
        }
        let wall = wallTime(pts)
        var seconds = time_t(wall)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int((wall - Double(seconds)) * 1000)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC   frame %d",
                      parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, millis, number)
    }

    /// Where the caption box is at `pts`, as textoverlay's relative xpos: it bounces
    /// across the picture (8 s a sweep), so a frozen or juddering stream shows at a glance.
    /// Across only: a box moving down as well changes a whole row of macroblocks along its top
    /// and bottom edges every frame, for x264 to code.
    static func captionX(_ pts: ClockTime) -> Double {
        let phase = pts.seconds.truncatingRemainder(dividingBy: 16) / 8
        return stillCaptionPlace.x + 0.5 * (phase <= 1 ? phase : 2 - phase)
    }

    /// Where a still caption stays: where a moving one starts, top left.
    static let stillCaptionPlace = (x: 0.02, y: 0.05)

    /// The flash: a white square in the middle of the picture, a third of its height. A whole
    /// white frame made x264 code two frames a second afresh (into the flash and out of it).
    /// On x264's 16 px macroblocks where the picture allows (and even pixels, for chroma).
    static func flashSquare(width: Int, height: Int) -> (x: Int, y: Int, side: Int) {
        let third = min(width, height / 3)
        let side = third >= 16 ? third & ~15 : third & ~1
        return (((width - side) / 2) & ~15, ((height - side) / 2) & ~15, side)
    }

    /// Flashes a marked I420 frame (`flashSquare`), and writes the picture clock along its bottom.
    func flashAndStamp(_ info: inout ProbeInfo, width: Int, height: Int) {
        guard let pts = info.buffer?.pts else { return }
        let wall = wallTime(pts)
        let number = frames.withLock { $0 }
        let marked = isMarked(pts)
        guard marked || clock else { return }
        // GStreamer's default I420 layout: strides rounded up to 4, chroma at half size.
        let lumaStride = (width + 3) & ~3
        let chromaStride = ((width + 1) / 2 + 3) & ~3
        let rows = (height + 1) & ~1
        let luma = lumaStride * rows
        let chroma = chromaStride * (rows / 2)
        _ = info.withWritableBuffer { writable in
            writable.withUnsafeMutableBytes { raw in
                guard raw.count >= luma + 2 * chroma, let base = raw.baseAddress else { return }
                if marked {
                    let square = Self.flashSquare(width: width, height: height)
                    for row in square.y..<(square.y + square.side) {
                        memset(base + row * lumaStride + square.x, 235, square.side)
                    }
                    for row in (square.y / 2)..<((square.y + square.side) / 2) {
                        memset(base + luma + row * chromaStride + square.x / 2, 128, square.side / 2)
                        memset(base + luma + chroma + row * chromaStride + square.x / 2, 128, square.side / 2)
                    }
                }
                guard clock else { return }
                PictureClock.stamp(milliseconds: UInt64(max(0, wall * 1000).rounded()), frame: UInt64(number), into: raw,
                                   offset: 0, stride: lumaStride, width: width, height: height)
                // Grey under the stripe, so its blocks are black and white, not tinted by the pattern.
                let stripeTop = (height - PictureClock.stripeRows(height: height)) / 2
                for row in stripeTop..<(rows / 2) {
                    memset(base + luma + row * chromaStride, 128, chromaStride)
                    memset(base + luma + chroma + row * chromaStride, 128, chromaStride)
                }
            }
        }
    }
}
