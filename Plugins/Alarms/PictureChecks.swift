import Foundation

/// The picture's checks over its luma plane, as ffmpeg's `blackdetect` and `freezedetect` judge
/// it: black when at least a share of pixels sit at or under a luma level (limited range, 16 to
/// 235); frozen when the mean luma change from the frame the freeze began with stays under a
/// noise level. Every fourth pixel of every fourth row is read: a 720p frame is 57,600 samples.
struct PictureChecks {
    static let step = 4

    let width: Int
    let height: Int
    private let blackLuma: UInt8
    private let blackShare: Double
    private let frozenNoise: Double
    private var black: HeldCondition?
    private var frozen: HeldCondition?
    /// The frame a freeze would be measured from (its samples) and its start (media seconds).
    private var reference: [UInt8] = []
    private var referenceStart = 0.0
    private var samples: [UInt8] = []

    init(width: Int, height: Int, settings: AlarmSettings) {
        self.width = width
        self.height = height
        let active = settings.active(on: .video)
        let level = settings.checks[.black]?.threshold ?? 0.1
        blackLuma = UInt8(clamping: Int((16 + level * (235 - 16)).rounded(.down)))
        blackShare = settings.blackShare
        frozenNoise = pow(10, (settings.checks[.frozen]?.threshold ?? -60) / 20)
        black = active.contains(.black) ? settings.checks[.black].map { HeldCondition(kind: .black, check: $0) } : nil
        frozen = active.contains(.frozen) ? settings.checks[.frozen].map { HeldCondition(kind: .frozen, check: $0) } : nil
    }

    /// One frame's luma plane (`offset`, `stride` into `bytes`), shown from `start` to `end` media seconds.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, offset: Int, stride: Int, start: Double, end: Double) -> [AlarmChange] {
        guard width > 0, height > 0, stride >= width, offset + stride * (height - 1) + width <= bytes.count else { return [] }
        samples.removeAll(keepingCapacity: true)
        var blackCount = 0
        for row in Swift.stride(from: 0, to: height, by: Self.step) {
            let line = offset + row * stride
            for column in Swift.stride(from: 0, to: width, by: Self.step) {
                let luma = bytes[line + column]
                samples.append(luma)
                if luma <= blackLuma { blackCount += 1 }
            }
        }
        var changes: [AlarmChange] = []
        let share = Double(blackCount) / Double(max(samples.count, 1))
        if let change = black?.update(faulty: share >= blackShare, value: share, from: start, to: end, worse: (>)) { changes.append(change) }
        if frozen != nil {
            let unchanged = reference.count == samples.count && meanChange() <= frozenNoise
            if !unchanged {
                reference = samples
                referenceStart = start
            }
            let change = frozen?.update(faulty: unchanged, value: end - referenceStart, from: start, to: end, began: referenceStart, worse: (>))
            if let change { changes.append(change) }
        }
        return changes
    }

    /// The mean absolute luma change from the reference frame, as a share of full scale.
    private func meanChange() -> Double {
        var total = 0
        for index in samples.indices { total += abs(Int(samples[index]) - Int(reference[index])) }
        return Double(total) / Double(max(samples.count, 1)) / 255
    }

    var raised: [AlarmKind] { [black, frozen].compactMap { $0 }.filter(\.raised).map(\.kind) }
}
