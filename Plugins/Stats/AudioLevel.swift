import Foundation
import CastlineKit

/// How raw audio samples are laid out in memory, read from the caps' `format`.
/// Levels are read in the stream's own format, so the stage never converts
/// (and never changes) the media it measures.
enum SampleFormat: Sendable, Equatable {
    case f32, f64, s16, s32

    /// The formats castline reads; big-endian and packed 24-bit audio are rare
    /// enough in castline's pipelines that they get counters but no levels.
    init?(caps format: String) {
        switch format {
        case "F32LE": self = .f32
        case "F64LE": self = .f64
        case "S16LE": self = .s16
        case "S32LE": self = .s32
        default: return nil
        }
    }

    var bytesPerSample: Int {
        switch self {
        case .s16: 2
        case .f32, .s32: 4
        case .f64: 8
        }
    }
}

/// The level of one buffer: mean square and peak of every sample (all
/// channels together), as linear full-scale fractions.
struct AudioLevel: Sendable, Equatable {
    var sumOfSquares: Double
    var peak: Double
    var samples: Int

    static let empty = AudioLevel(sumOfSquares: 0, peak: 0, samples: 0)

    /// Reads every sample once. Bytes that do not make a whole sample are ignored.
    static func measure(_ bytes: UnsafeRawBufferPointer, format: SampleFormat) -> AudioLevel {
        let count = bytes.count / format.bytesPerSample
        guard count > 0, let base = bytes.baseAddress else { return .empty }
        var sum = 0.0
        var peak = 0.0
        // Unaligned loads: GstMemory is normally aligned, but nothing promises it.
        switch format {
        case .f32:
            for index in 0..<count {
                let value = Double(base.loadUnaligned(fromByteOffset: index * 4, as: Float.self))
                sum += value * value
                peak = max(peak, abs(value))
            }
        case .f64:
            for index in 0..<count {
                let value = base.loadUnaligned(fromByteOffset: index * 8, as: Double.self)
                sum += value * value
                peak = max(peak, abs(value))
            }
        case .s16:
            for index in 0..<count {
                let value = Double(Int16(littleEndian: base.loadUnaligned(fromByteOffset: index * 2, as: Int16.self))) / 32768
                sum += value * value
                peak = max(peak, abs(value))
            }
        case .s32:
            for index in 0..<count {
                let value = Double(Int32(littleEndian: base.loadUnaligned(fromByteOffset: index * 4, as: Int32.self))) / 2_147_483_648
                sum += value * value
                peak = max(peak, abs(value))
            }
        }
        return AudioLevel(sumOfSquares: sum, peak: peak, samples: count)
    }

    mutating func add(_ other: AudioLevel) {
        sumOfSquares += other.sumOfSquares
        peak = max(peak, other.peak)
        samples += other.samples
    }

    /// RMS in dBFS (a full-scale sine reads -3 dBFS); nil when nothing was measured.
    var rmsDBFS: Double? {
        guard samples > 0 else { return nil }
        return Self.decibels((sumOfSquares / Double(samples)).squareRoot())
    }

    var peakDBFS: Double? { samples > 0 ? Self.decibels(peak) : nil }

    /// Digital silence would be -inf, which JSON cannot carry: levels stop at -120 dBFS.
    static let floor = -120.0

    static func decibels(_ linear: Double) -> Double {
        guard linear > 0 else { return floor }
        return max(floor, 20 * log10(linear))
    }
}

/// Announces a silence once the audio has stayed below the threshold for
/// `after` of media time, and the sound when a buffer rises above it again.
/// Media time (buffer durations), not wall time, so a file read faster than
/// real time reports the silences it carries.
struct SilenceDetector: Sendable {
    let threshold: Double
    let after: Duration
    private var quiet: Duration = .zero
    private(set) var isSilent = false
    /// Silences announced so far.
    private(set) var silences = 0

    init(threshold: Double, after: Duration) {
        self.threshold = threshold
        self.after = after
    }

    /// Feeds one buffer's RMS level and duration; returns a change to announce.
    mutating func feed(rmsDBFS: Double, duration: Duration) -> SoundChange? {
        if rmsDBFS < threshold {
            quiet += duration
            if !isSilent, quiet >= after {
                isSilent = true
                silences += 1
                return .silence
            }
            return nil
        }
        quiet = .zero
        if isSilent {
            isSilent = false
            return .sound
        }
        return nil
    }
}

/// A change the stats stage hears on a stream, said as a stage event of that name.
enum SoundChange: String, Sendable, Equatable {
    /// Audio stayed below `silence-below` for `silence-after`.
    case silence
    /// Audio came back above the threshold after a silence.
    case sound
}
