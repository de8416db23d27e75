import CastlineKit
import Foundation
import PipelineConfig
import Testing
@testable import StagePlugins

/// The alarms judged from what other parts report, fed events as a session feeds them.
@Suite("alarms from figures")
struct FigureAlarmsTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func stats(_ second: Double, _ figures: [String: Double], stage: String = "source", stream: StreamKind? = nil) -> RunEvent {
        RunEvent(time: start.addingTimeInterval(second), pipeline: "p", kind: .stats(StatsSample(stage: stage, stream: stream, figures: figures)))
    }

    static func alarms(_ events: [RunEvent]) -> [(name: String, kind: String, second: Double, since: Double)] {
        events.compactMap { event in
            guard case .stage(let alarm) = event.kind, let kind = alarm.labels["kind"], let since = alarm.labels["since"] else { return nil }
            let sinceDate = (try? Date(since, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))) ?? .distantPast
            return (alarm.name, kind, event.time.timeIntervalSince(start), sinceDate.timeIntervalSince(start))
        }
    }

    @Test("a live playlist whose next segment is overdue is stalled at once, from when it fell due; cleared when media comes, having lasted till then")
    func stalledPlaylist() {
        var judge = FigureAlarms(options: OptionValues(), stage: "alarms2")
        var out: [RunEvent] = []
        for second in 0..<10 {
            var figures = [StatsFigure.downloadBitrate: 900.0]
            if (4..<7).contains(second) { figures[StatsFigure.waitingForMedia] = Double(second - 4) + 0.5 }
            out += judge.update(Self.stats(Double(second), figures))
        }
        let seen = Self.alarms(out)
        #expect(seen.map(\.name) == ["alarm-raised", "alarm-cleared"] && seen.allSatisfy { $0.kind == "stalled" }, "\(seen)")
        #expect(seen.first?.second == 4 && abs((seen.first?.since ?? 0) - 3.5) < 0.01, "\(seen)")
        #expect(seen.last?.second == 7, "\(seen)")
        // From 3.5 s, when it fell due, to 7 s, when the sample without it came with the new media.
        let lasted = out.compactMap { event -> Double? in
            if case .stage(let alarm) = event.kind { alarm.fields["lasted_s"] } else { nil }
        }
        #expect(lasted == [3.5], "\(lasted)")
        // Its figures say the rule it went by: raised when the source first said it waited (0.5 s here), with no hold of its own.
        let raised = out.compactMap { event -> StageEvent? in
            if case .stage(let alarm) = event.kind, alarm.name == AlarmsStage.raisedEvent { alarm } else { nil }
        }
        #expect(raised.first?.fields["hold_s"] == 0 && raised.first?.fields["threshold"] == 0.5, "\(raised)")
        // The wall-clock time on its line reads as the event's `since` does: UTC, 24-hour, whatever the locale.
        #expect(raised.first?.line?.contains("since 08:00:03 UTC") == true, "\(raised)")
    }

    @Test("a stream that ends while stalled: the alarm is cleared as it ends")
    func clearedAtTheEnd() {
        var judge = FigureAlarms(options: OptionValues(), stage: "alarms2")
        var out: [RunEvent] = []
        for second in 0..<6 {
            var figures = [StatsFigure.downloadBitrate: 900.0]
            if second >= 3 { figures[StatsFigure.waitingForMedia] = Double(second - 3) + 0.5 }
            out += judge.update(Self.stats(Double(second), figures))
        }
        out += judge.update(RunEvent(time: Self.start.addingTimeInterval(6), pipeline: "p", kind: .streamEnded(reason: "no new media for 30s")))
        // The source goes on saying it waits until the pipeline stops: not raised again.
        out += judge.update(Self.stats(7, [StatsFigure.downloadBitrate: 900.0, StatsFigure.waitingForMedia: 4.5]))
        let seen = Self.alarms(out)
        #expect(seen.map(\.name) == ["alarm-raised", "alarm-cleared"] && seen.last?.second == 6, "\(seen)")
    }

    @Test("another source: stalled once no stream brought a byte for the hold (5 s)")
    func stalledStreams() {
        var judge = FigureAlarms(options: OptionValues(), stage: "alarms2")
        var out: [RunEvent] = []
        for second in 0..<12 {
            let bitrate = (3..<10).contains(second) ? 0.0 : 128
            out += judge.update(Self.stats(Double(second), [StatsFigure.bitrate: bitrate], stage: "stats1", stream: .audio))
            out += judge.update(Self.stats(Double(second), [StatsFigure.bitrate: bitrate * 10], stage: "stats1", stream: .video))
        }
        let seen = Self.alarms(out)
        #expect(seen.map(\.name) == ["alarm-raised", "alarm-cleared"], "\(seen)")
        #expect(seen.first?.second == 8 && seen.first?.since == 3 && seen.last?.second == 10, "\(seen)")
    }

    @Test("behind live, a/v drift, a starved stream, slow segments and a long reconnect, each after its hold; the floor is off unless asked")
    func others() throws {
        var options = OptionValues()
        var floor = OptionValues()
        floor.set(AlarmSettings.Floor.on, true)
        options.set(AlarmSettings.bitrate, floor)
        var judge = FigureAlarms(options: options, stage: "alarms2")
        var plain = FigureAlarms(options: OptionValues(), stage: "alarms2")
        var out: [RunEvent] = [], unasked: [RunEvent] = []
        for second in 0..<40 {
            let time = Double(second)
            let events = [
                Self.stats(time, [StatsFigure.downloadBitrate: 900, StatsFigure.latency: second >= 5 ? 35 : 8,
                                  StatsFigure.fetchSpeed: (25..<38).contains(second) ? 0.8 : 6]),
                Self.stats(time, ["latency_audio_s": 8, "av_offset_ms": second >= 10 ? -80 : 5], stage: "latency3"),
                Self.stats(time, [StatsFigure.bitrate: second >= 20 ? 40 : 128], stage: "stats1", stream: .audio),
            ] + (second == 2 ? [RunEvent(time: Self.start.addingTimeInterval(time), pipeline: "p", kind: .stateChanged(from: .playing, to: .reconnecting))] : [])
            for event in events {
                out += judge.update(event)
                unasked += plain.update(event)
            }
        }
        let raised = Self.alarms(out).filter { $0.name == "alarm-raised" }
        func first(_ kind: String) -> (second: Double, since: Double)? { raised.first { $0.kind == kind }.map { ($0.second, $0.since) } }
        #expect(first("behind-live").map { $0 == (15, 5) } == true, "\(raised)")
        #expect(first("av-drift").map { $0 == (15, 10) } == true, "\(raised)")
        #expect(first("bitrate").map { $0 == (30, 20) } == true, "\(raised)")
        #expect(first("reconnecting").map { $0 == (32, 2) } == true, "\(raised)")
        #expect(first("slow-download").map { $0 == (35, 25) } == true, "\(raised)")
        #expect(!Self.alarms(unasked).contains { $0.kind == "bitrate" })
    }
}
