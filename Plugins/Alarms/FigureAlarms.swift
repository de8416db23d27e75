import CastlineKit
import Foundation

/// The alarms judged from what other parts report rather than from the media, on the wall
/// clock: the source brings nothing new (`stalled`: a live HLS playlist as soon as its next
/// segment is 1.5 target durations late, any other source once no stream has brought a byte
/// for the hold), its segments come slower than they play (`slow-download`), the stream plays
/// too far `behind-live`, sound and picture drift apart
/// (`av-drift`, from the latency stage), a stream's `bitrate` under a floor, a source
/// `reconnecting` for too long. The session feeds it every event of a pipeline that has an
/// alarms stage; what it returns are that stage's alarm events.
public struct FigureAlarms: Sendable {
    let settings: AlarmSettings
    let stage: String
    private var conditions: [String: HeldCondition] = [:]
    /// When each condition was last judged (wall seconds): the next judgement covers the time since.
    private var judged: [String: Double] = [:]
    private var readsPlaylist = false
    private var quietStreams: [String: Bool] = [:]
    private var reconnectingSince: Double?
    /// The stream has ended: nothing more is judged.
    private var ended = false
    /// How late the playlist's next segment was when the source first said it was waiting.
    private var playlistLateness: Double?
    /// The latest seconds behind live each part reported.
    private var behindLive: [String: Double] = [:]

    /// `options`: the alarms stage's; `stage`: its name in events.
    public init(options: OptionValues, stage: String) {
        settings = AlarmSettings(options)
        self.stage = stage
    }

    public mutating func update(_ event: RunEvent) -> [RunEvent] {
        guard !ended else { return [] }
        let now = event.time.timeIntervalSince1970
        var changes: [AlarmChange] = []
        switch event.kind {
        case .stats(let sample):
            let figures = sample.figures
            if sample.stream == nil, figures[StatsFigure.downloadBitrate] != nil {
                readsPlaylist = true
                let waiting = figures[StatsFigure.waitingForMedia]
                // The sample without it is said as the new media comes: the fault ended then, not a tick before.
                // The source says it once the next segment is 1.5 target durations late: that is the
                // threshold (its first figure), and the alarm needs no hold of its own.
                if let waiting, conditions["stalled"]?.faultBegan == nil { playlistLateness = waiting }
                changes += judge(.stalled, key: "stalled", faulty: waiting != nil, value: waiting ?? 0, at: now,
                                 began: waiting.map { now - $0 }, ended: waiting == nil ? now : nil, hold: 0, threshold: playlistLateness)
                if let speed = figures[StatsFigure.fetchSpeed] {
                    changes += judge(.slowDownload, key: "slow-download", faulty: speed < threshold(.slowDownload), value: speed, at: now,
                                     worse: (<))
                }
            }
            if let stream = sample.stream, let bitrate = figures[StatsFigure.bitrate] {
                changes += judge(.bitrate, key: "bitrate \(sample.stage) \(stream)", faulty: bitrate < threshold(.bitrate), value: bitrate,
                                 at: now, stream: stream, worse: (<))
                if !readsPlaylist {
                    quietStreams["\(sample.stage) \(stream)"] = bitrate == 0
                    let quiet = quietStreams.values.allSatisfy { $0 }
                    changes += judge(.stalled, key: "stalled", faulty: quiet, value: quiet ? now - (conditions["stalled"]?.faultBegan ?? now) : 0,
                                     at: now)
                }
            }
            // Several parts may know it (the source's programme time, the test signal's clock): the most counts.
            if let own = sample.behindLive {
                behindLive[sample.stage] = own
                let behind = behindLive.values.max() ?? own
                changes += judge(.behindLive, key: "behind-live", faulty: behind > threshold(.behindLive), value: behind, at: now)
            }
            if let offset = figures["av_offset_ms"] {
                changes += judge(.avDrift, key: "av-drift", faulty: abs(offset) > threshold(.avDrift), value: offset, at: now,
                                 worse: { abs($0) > abs($1) })
            }
        case .streamEnded, .endOfStream:
            // Over: whatever was raised is cleared as the stream ends, and nothing is judged after
            // (the source goes on saying it waits until the pipeline stops).
            for key in conditions.keys.sorted() {
                guard let condition = conditions[key], condition.raised else { continue }
                changes += judge(condition.kind, key: key, faulty: false, value: 0, at: now, ended: now,
                                 hold: condition.check.hold, threshold: condition.check.threshold, clearAfter: 0, stream: condition.stream)
            }
            reconnectingSince = nil
            ended = true
        case .stateChanged(_, let to):
            if to == .reconnecting {
                reconnectingSince = reconnectingSince ?? now
            } else {
                changes += judge(.reconnecting, key: "reconnecting", faulty: false, value: 0, at: now, ended: now)
                reconnectingSince = nil
            }
        default:
            break
        }
        // Any event is a tick for a reconnect that lasts (the source's samples come on meanwhile).
        if let since = reconnectingSince {
            changes += judge(.reconnecting, key: "reconnecting", faulty: true, value: now - since, at: now, began: since)
        }
        return changes.map { change in
            RunEvent(time: event.time, pipeline: event.pipeline, kind: .stage(AlarmsStage.event(
                change, stage: stage, since: Date(timeIntervalSince1970: change.since), mediaSince: nil)))
        }
    }

    private func threshold(_ kind: AlarmKind) -> Double { settings.checks[kind]?.threshold ?? 0 }

    /// One judgement of `key` over the time since its last, when its check is on.
    private mutating func judge(_ kind: AlarmKind, key: String, faulty: Bool, value: Double, at now: Double, began: Double? = nil,
                                ended: Double? = nil, hold: Double? = nil, threshold: Double? = nil, clearAfter: Double? = nil, stream: StreamKind? = nil,
                                worse: (Double, Double) -> Bool = (>)) -> [AlarmChange] {
        guard var check = settings.checks[kind], check.on else { return [] }
        if let hold { check.hold = hold }
        if let threshold { check.threshold = threshold }
        if let clearAfter { check.clearAfter = clearAfter }
        var condition = conditions[key] ?? HeldCondition(kind: kind, check: check, stream: stream)
        condition.check = check
        let from = judged[key] ?? now
        // A figure is what was so when it was reported: a fault is dated from the first report of it.
        let change = condition.update(faulty: faulty, value: value, from: from, to: now, began: began ?? now, ended: ended, worse: worse)
        conditions[key] = condition
        judged[key] = now
        return change.map { [$0] } ?? []
    }
}
