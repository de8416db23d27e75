import CEbur128
import Foundation

/// The sound's checks over raw F32 interleaved audio. Silence is the RMS of 10 ms blocks;
/// loudness (momentary, short-term, integrated) and true peak are libebur128's, the meter
/// ffmpeg's `ebur128` filter and the broadcast tools agree with. Used only under the stage's
/// lock (hence unchecked: its meter is C state that moves with it).
final class SoundChecks: @unchecked Sendable {
    static let block = 0.010
    /// Loudness is judged this often (short-term loudness moves little in less).
    static let loudnessStep = 0.100
    /// No level is lower than this: digital silence reads as −150 dBFS, not −∞.
    static let floor = -150.0
    /// Nor a loudness lower than EBU R128's absolute gate: near silence reads −70 LUFS.
    static let loudnessFloor = -70.0

    let rate: Int
    let channels: Int
    private var meter: UnsafeMutablePointer<ebur128_state>?
    private var conditions: [AlarmKind: HeldCondition]
    /// Samples of the 10 ms block being summed, and where it began (media seconds).
    private var blockFrames = 0
    private var blockSquares = 0.0
    private var blockStart: Double?
    private var sinceLoudness = 0.0
    /// The highest true peak since the last report (linear).
    private var peakSinceReport = 0.0

    init(rate: Int, channels: Int, settings: AlarmSettings) {
        self.rate = rate
        self.channels = channels
        let mode = Int32(EBUR128_MODE_S.rawValue | EBUR128_MODE_I.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue | EBUR128_MODE_HISTOGRAM.rawValue)
        meter = ebur128_init(UInt32(max(channels, 1)), UInt(max(rate, 1)), mode)
        conditions = Dictionary(uniqueKeysWithValues: settings.active(on: .audio).compactMap { kind in
            settings.checks[kind].map { (kind, HeldCondition(kind: kind, check: $0)) }
        })
    }

    deinit { ebur128_destroy(&meter) }

    /// Feeds `samples` (interleaved) that begin at `start` media seconds; what was raised or cleared.
    func feed(_ samples: UnsafeBufferPointer<Float>, start: Double) -> [AlarmChange] {
        guard channels > 0, rate > 0, let base = samples.baseAddress else { return [] }
        let frames = samples.count / channels
        var changes: [AlarmChange] = []
        var frame = 0
        let blockFrameCount = max(1, Int(Double(rate) * Self.block))
        while frame < frames {
            if blockStart == nil { blockStart = start + Double(frame) / Double(rate) }
            let take = min(blockFrameCount - blockFrames, frames - frame)
            var squares = 0.0
            for index in frame * channels ..< (frame + take) * channels {
                let value = Double(base[index])
                squares += value * value
            }
            blockSquares += squares
            blockFrames += take
            frame += take
            if blockFrames == blockFrameCount, let began = blockStart {
                changes += endBlock(began: began, end: began + Double(blockFrames) / Double(rate))
            }
        }
        if let meter {
            ebur128_add_frames_float(meter, base, frames)
            var peak = 0.0
            for channel in 0..<channels {
                var channelPeak = 0.0
                if ebur128_prev_true_peak(meter, UInt32(channel), &channelPeak) == 0 { peak = max(peak, channelPeak) }
            }
            peakSinceReport = max(peakSinceReport, peak)
            let end = start + Double(frames) / Double(rate)
            changes += judge(.clipping, faulty: peak > 0 && Self.decibels(peak) > threshold(.clipping), value: Self.decibels(peak),
                             from: start, to: end)
            sinceLoudness += Double(frames) / Double(rate)
            if sinceLoudness >= Self.loudnessStep {
                sinceLoudness = 0
                let shortTerm = loudness(ebur128_loudness_shortterm)
                changes += judge(.loud, faulty: shortTerm > threshold(.loud), value: shortTerm, from: end - Self.loudnessStep, to: end)
                changes += judge(.quiet, faulty: shortTerm < threshold(.quiet), value: shortTerm, from: end - Self.loudnessStep, to: end,
                                 worse: (<))
            }
        }
        return changes
    }

    private func endBlock(began: Double, end: Double) -> [AlarmChange] {
        let meanSquare = blockSquares / Double(blockFrames * channels)
        let level = meanSquare > 0 ? max(10 * log10(meanSquare), Self.floor) : Self.floor
        blockFrames = 0
        blockSquares = 0
        blockStart = nil
        return judge(.silence, faulty: level < threshold(.silence), value: level, from: began, to: end, worse: (<))
    }

    private func threshold(_ kind: AlarmKind) -> Double { conditions[kind]?.check.threshold ?? 0 }

    private func judge(_ kind: AlarmKind, faulty: Bool, value: Double, from start: Double, to end: Double,
                       worse: (Double, Double) -> Bool = (>)) -> [AlarmChange] {
        guard conditions[kind] != nil else { return [] }
        return conditions[kind]?.update(faulty: faulty, value: value, from: start, to: end, worse: worse).map { [$0] } ?? []
    }

    private func loudness(_ read: (UnsafeMutablePointer<ebur128_state>?, UnsafeMutablePointer<Double>?) -> Int32) -> Double {
        var value = -Double.infinity
        guard let meter, read(meter, &value) == 0, value.isFinite else { return Self.loudnessFloor }
        return max(value, Self.loudnessFloor)
    }

    static func decibels(_ linear: Double) -> Double { linear > 0 ? max(20 * log10(linear), floor) : floor }

    /// Loudness now (LUFS: momentary, short-term, integrated) and the highest true peak since the
    /// last call (dBTP). A figure not yet measurable (under 400 ms of sound) is left out.
    func figures() -> [String: Double] {
        var figures: [String: Double] = [:]
        guard let meter else { return figures }
        var value = 0.0
        if ebur128_loudness_momentary(meter, &value) == 0, value.isFinite { figures[AlarmsStage.momentary.name] = max(value, Self.loudnessFloor) }
        if ebur128_loudness_shortterm(meter, &value) == 0, value.isFinite { figures[AlarmsStage.shortTerm.name] = max(value, Self.loudnessFloor) }
        if ebur128_loudness_global(meter, &value) == 0, value.isFinite { figures[AlarmsStage.integrated.name] = max(value, Self.loudnessFloor) }
        if peakSinceReport > 0 { figures[AlarmsStage.truePeak.name] = Self.decibels(peakSinceReport) }
        peakSinceReport = 0
        return figures
    }

    /// Every alarm that is raised now, for a stream that ends.
    var raised: [AlarmKind] { conditions.values.filter(\.raised).map(\.kind) }
}
