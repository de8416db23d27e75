import CastlineKit
import Foundation
import StagePlugins
import Testing
@testable import CastlineApp

@Suite("the status line: what it shows, and that it fits")
struct StatusLineTests {
    static func stats(_ stage: String, _ stream: StreamKind?, _ figures: [String: Double]) -> RunEvent {
        RunEvent(pipeline: "p", kind: .stats(StatsSample(stage: stage, stream: stream, figures: figures)))
    }

    @Test("the position is the furthest stream's heard position")
    func positionOfWhatIsHeard() {
        var line = StatsStatusLine(commands: [], playoutMoved: false)
        _ = line.update(Self.stats("stats0", .video, [StatsFigure.position: 2.0]))
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.position: 2.04]))
        #expect(line.text == "2.0 s  audio  video")
    }

    @Test("an alarms stage: the short-term loudness with the audio, and each alarm while it is raised, first")
    func alarms() {
        var line = StatsStatusLine(commands: [], playoutMoved: false, statsStages: ["stats0"])
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.bitrate: 128]))
        _ = line.update(Self.stats("alarms1", .audio, [AlarmsStage.shortTerm.name: -21.04, AlarmsStage.active.name: 0]))
        #expect(line.text == "audio 128 kbit/s -21.0 LUFS")
        func alarm(_ name: String, _ kind: String, _ stream: StreamKind) -> RunEvent {
            RunEvent(pipeline: "p", kind: .stage(StageEvent(stage: "alarms1", stream: stream, name: name, fields: [:], labels: ["kind": kind])))
        }
        _ = line.update(alarm(AlarmsStage.raisedEvent, "silence", .audio))
        _ = line.update(alarm(AlarmsStage.raisedEvent, "frozen", .video))
        #expect(line.text == "ALARM silence (audio), frozen (video)  audio 128 kbit/s -21.0 LUFS")
        _ = line.update(alarm(AlarmsStage.clearedEvent, "silence", .audio))
        #expect(line.text == "ALARM frozen (video)  audio 128 kbit/s -21.0 LUFS")
    }

    @Test("with two stats stages the outermost speaks, and the line says which")
    func outermostStage() {
        var line = StatsStatusLine(commands: [], playoutMoved: false, statsStages: ["raw", "encoded"])
        _ = line.update(Self.stats("raw", .video, [StatsFigure.bitrate: 331_776]))
        #expect(line.text == "video 331776 kbit/s  (raw)")
        _ = line.update(Self.stats("encoded", .video, [StatsFigure.bitrate: 2_480]))
        _ = line.update(Self.stats("raw", .video, [StatsFigure.bitrate: 331_776]))
        #expect(line.text == "video 2480 kbit/s  (encoded)")
    }

    @Test("a stage command's figures read in its own words; behind a delay the source's latency (which counts its hold) is shown")
    func commandFigures() {
        var line = StatsStatusLine(commands: ComponentRegistry.builtin.commands, playoutMoved: true)
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.bitrate: 128]))
        _ = line.update(Self.stats("delay0", nil, ["delay_s": 12, "available_delay_s": 25]))
        _ = line.update(Self.stats("hls", nil, [StatsFigure.downloadBitrate: 900, StatsFigure.latency: 8]))
        #expect(line.text == "delay 12.0 s / 25.0 s available  audio 128 kbit/s  latency 8.0 s")
    }

    @Test("a delay set anew leaves the latency out until it is read again (a figure from before the move is not shown as now); a gain set anew leaves it")
    func latencyAfterDelayMove() {
        var line = StatsStatusLine(commands: ComponentRegistry.builtin.commands, playoutMoved: true)
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.bitrate: 128]))
        _ = line.update(Self.stats("delay0", nil, ["delay_s": 0, "available_delay_s": 25]))
        _ = line.update(Self.stats("latency0", nil, [LatencyStage.audioLatency.name: 6.2]))
        #expect(line.text == "delay 0.0 s / 25.0 s available  audio 128 kbit/s  latency 6.20 s")
        // The history growing is no move.
        _ = line.update(RunEvent(pipeline: "p", kind: .stage(StageEvent(
            stage: "delay0", name: "available-delay-changed", fields: [:], figures: ["available_delay_s": 26]))))
        #expect(line.text == "delay 0.0 s / 26.0 s available  audio 128 kbit/s  latency 6.20 s")
        let redraw = line.update(RunEvent(pipeline: "p", kind: .stage(StageEvent(
            stage: "delay0", name: "delay-changed", command: "delay", fields: [:], figures: ["delay_s": 5, "available_delay_s": 26]))))
        #expect(redraw && line.text == "delay 5.0 s / 26.0 s available  audio 128 kbit/s")
        _ = line.update(Self.stats("latency0", nil, [LatencyStage.audioLatency.name: 11.2]))
        #expect(line.text == "delay 5.0 s / 26.0 s available  audio 128 kbit/s  latency 11.20 s")
        // A gain set anew moves nothing in time: the latency stays.
        _ = line.update(RunEvent(pipeline: "p", kind: .stage(StageEvent(
            stage: "gain0", name: "gain-changed", command: "gain", fields: [:], figures: ["gain_db": -6]))))
        #expect(line.text?.contains("latency 11.20 s") == true, "\(line.text ?? "")")
    }

    @Test("a live source whose next segment is overdue says it waits for new media, not that it plays; and says playing again when media comes")
    func waitingForMedia() {
        var line = StatsStatusLine(commands: [], playoutMoved: false)
        _ = line.update(RunEvent(pipeline: "p", kind: .stateChanged(from: .connecting, to: .playing)))
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.bitrate: 0]))
        #expect(line.text == "playing  audio 0 kbit/s")
        let waiting = line.update(Self.stats("hls", nil, [StatsFigure.downloadBitrate: 900, StatsFigure.waitingForMedia: 3.2]))
        #expect(waiting && line.text == "waiting for new media (3 s)  audio 0 kbit/s")
        let back = line.update(Self.stats("hls", nil, [StatsFigure.downloadBitrate: 900]))
        #expect(back && line.text == "playing  audio 0 kbit/s")
    }

    @Test("the test-signal clock's latency and A/V offset, in place of the playlist's programme-time figure")
    func measuredLatency() {
        var line = StatsStatusLine(commands: [], playoutMoved: false)
        _ = line.update(Self.stats("stats0", .audio, [StatsFigure.bitrate: 128]))
        _ = line.update(Self.stats("hls", nil, [StatsFigure.downloadBitrate: 900, StatsFigure.latency: 8]))
        #expect(line.text == "audio 128 kbit/s  latency 8.0 s")
        _ = line.update(Self.stats("latency0", nil, [LatencyStage.audioLatency.name: 6.2, LatencyStage.videoLatency.name: 6.19, LatencyStage.avOffset.name: 12]))
        #expect(line.text == "audio 128 kbit/s  latency 6.19 s a/v +12 ms")
    }

    @Test("the encoders' target, summed over the streams they encode, for beside the publisher's rate; a swap's new target replaces the old")
    func targetBitrate() {
        var line = StatsStatusLine(commands: [], playoutMoved: false)
        #expect(line.target == nil)
        for (stream, kbps) in [(StreamKind.video, 2500.0), (.audio, 128)] {
            _ = line.update(RunEvent(pipeline: "p", kind: .stage(.targetBitrate(stage: "encode0", stream: stream, kbps: kbps))))
        }
        #expect(line.target == "target 2628 kbit/s")
        _ = line.update(RunEvent(pipeline: "p", kind: .stage(.targetBitrate(stage: "encode0", stream: .video, kbps: 4500))))
        #expect(line.target == "target 4628 kbit/s")
    }

    @Test("fitted to 80 columns: the least important parts go first, never a wrapped line")
    func fitsTheWidth() {
        let parts = ["playing", "1234.5 s", "delay 12.0 s / 25.0 s available", "audio 128 kbit/s -14 dBFS",
                     "video 2480 kbit/s 30 fps", "latency 8.1 s"]
        let fitted = StatsStatusLine.fit(parts, width: 80)
        #expect(fitted.count <= 80)
        #expect(fitted == "playing  1234.5 s  delay 12.0 s / 25.0 s available  audio 128 kbit/s -14 dBFS")
        #expect(StatsStatusLine.fit(["a very long single part"], width: 6) == "a very")
        // A publisher's part, wider than what the state and position leave of 80 columns: cut between
        // its figures, not dropped for the clock alone.
        let publishing = ["playing", "2.0 s", "publishing 0:02  2495 kbit/s  0.31 MB sent  reconnects 0  rtt 1 ms  lost 0",
                          "target 2628 kbit/s", "audio 128 kbit/s", "video 2500 kbit/s 30 fps"]
        #expect(StatsStatusLine.fit(publishing, width: 60) == "playing  2.0 s  publishing 0:02  2495 kbit/s  0.31 MB sent")
    }
}

@Suite("the summary at the end of a run")
struct RunSummaryTests {
    @Test("totals run across swaps: a stats stage or publisher made anew counts from 0, and the earlier count is kept")
    func totalsAcrossSwaps() {
        var summary = RunSummary()
        for bytes in [400_000.0, 800_000] { summary.add(StatusLineTests.stats("encoded", .video, ["bytes": bytes])) }
        summary.add(RunEvent(pipeline: "p", kind: .reloaded(changes: ["stages[0] encode changed"], took: .milliseconds(40))))
        for bytes in [300_000.0, 900_000] { summary.add(StatusLineTests.stats("encoded", .video, ["bytes": bytes])) }
        for (sent, acked) in [(5e6, 4e6), (1e6, 0.5e6), (2e6, 1.5e6)] {
            summary.add(StatusLineTests.stats("rtmp", nil, [StatsFigure.sentBytes: sent, StatsFigure.ackedBytes: acked]))
        }
        for (audio, offset) in [(6.0, 2.0), (6.2, -4.0), (6.1, 3.0)] {
            summary.add(StatusLineTests.stats("latency0", nil, [LatencyStage.audioLatency.name: audio, LatencyStage.avOffset.name: offset]))
        }
        let lines = summary.lines()
        #expect(lines.contains("  latency, sound: min/median/max 6.000/6.100/6.200 s"), "\(lines)")
        #expect(lines.contains("  a/v offset (sound minus picture): min/median/max -4.0/+2.0/+3.0 ms"), "\(lines)")
        #expect(lines.contains("  encoded video: 1.70 MB"), "\(lines)")
        #expect(lines.contains("  rtmp: 7.00 MB sent, 5.50 MB acknowledged"), "\(lines)")
    }

    @Test("a stream's bitrate is what it carried: every interval that carried media (the first too), weighed by it; not the empty seconds of a pause or after its end")
    func endedStreamBitrate() {
        var summary = RunSummary()
        // 1 s of media at 64 kbit/s (8 000 B), 2 s at 128, a pause (nothing came), 1 s at 128, then the end.
        for (bytes, kbps) in [(8_000.0, 64.0), (24_000, 128), (40_000, 128), (40_000, 0), (56_000, 128), (56_000, 0), (56_000, 0)] {
            summary.add(StatusLineTests.stats("stats0", .audio, ["bytes": bytes, StatsFigure.bitrate: kbps]))
        }
        // 56 000 B over 4 s of media: 112 kbit/s.
        #expect(summary.lines().contains("  stats0 audio: 0.06 MB, bitrate min/avg/max 64/112/128 kbit/s"), "\(summary.lines())")
    }

    @Test("a stage that reports a stream without counting its bytes (an alarms stage's loudness) has no line: not \"0.00 MB\"")
    func streamWithoutBytes() {
        var summary = RunSummary()
        summary.add(StatusLineTests.stats("stats0", .audio, ["bytes": 40_000, StatsFigure.bitrate: 128]))
        summary.add(StatusLineTests.stats("alarms1", .audio, ["loudness_short_term_lufs": -23]))
        #expect(!summary.lines().contains { $0.contains("alarms1") }, "\(summary.lines())")
        #expect(summary.lines().contains { $0.hasPrefix("  stats0 audio: 0.04 MB") }, "\(summary.lines())")
    }

    @Test("castline latency's line: the time, then each latency read and the A/V offset; nothing for other samples")
    func latencyLine() throws {
        let time = try #require(ISO8601DateFormatter().date(from: "2026-11-26T10:33:22Z"))
        let both = StatsSample(stage: "latency0", stream: nil,
                               figures: [LatencyStage.audioLatency.name: 4.0441, LatencyStage.videoLatency.name: 4.0439, LatencyStage.avOffset.name: 0.2])
        #expect(StatsOutputs.latencyLine(both, at: time) == "10:33:22.000  latency: sound 4.044 s, picture 4.044 s, a/v +0.2 ms")
        let picture = StatsSample(stage: "latency0", stream: nil, figures: [LatencyStage.videoLatency.name: 4.0439])
        #expect(StatsOutputs.latencyLine(picture, at: time) == "10:33:22.000  latency: picture 4.044 s")
        #expect(StatsOutputs.latencyLine(StatsSample(stage: "stats0", stream: .audio, figures: [StatsFigure.bitrate: 128]), at: time) == nil)
    }
}

@Suite("stage commands as people and the API write them")
struct StageCommandTextTests {
    @Test("ctl values: steps, a delay in its unit or bare seconds, a gain in dB")
    func adjustments() throws {
        let (delay, twelve) = try ControlCall.adjustment("delay", "12s")
        #expect(delay.name == "delay" && twelve == .set(12))
        #expect(try ControlCall.adjustment("delay", "2").1 == .set(2))
        #expect(try ControlCall.adjustment("delay", "-3").1 == .step(-3))
        #expect(try ControlCall.adjustment("gain", "-6dB").1 == .set(-6))
        #expect(throws: SettingsError.self) { try ControlCall.adjustment("gain", "-99dB") }
        // Past the range: the range is named, not "neither a step nor a gain".
        #expect { try ControlCall.adjustment("gain", "21dB") } throws: { "\($0)".contains("from -60 to 20") }
        #expect(throws: SettingsError.self) { try ControlCall.adjustment("loudness", "+1") }
        // A delay cannot be negative: a signed amount reads as "that much more or less", so it is
        // refused, with how to say either, never set as the value (`+1.5` was a delay of 1.5 s).
        for text in ["+1.5", "+1.5s", "-0.5", "+2s"] {
            #expect(performing: { try ControlCall.adjustment("delay", text) }, throws: { "\($0)".contains("whole steps") })
        }
        #expect(try ControlCall.adjustment("gain", "+3dB").1 == .set(3))
        // Steps past the limit, or past Int: refused, not negated into an overflow.
        #expect(try ControlCall.adjustment("delay", "-1000000").1 == .step(-1_000_000))
        for text in ["+1000001", "--9223372036854775808", "-9223372036854775808", "+-3", "-", "+"] {
            #expect(throws: SettingsError.self, "\(text)") { try ControlCall.adjustment("delay", text) }
        }
    }

    @Test("API bodies: a value in range or whole steps within the limit; anything else is refused with the usage")
    func bodies() throws {
        func body(_ json: String) throws(StageAdjustment.Refusal) -> StageAdjustment {
            try StageAdjustment(json: Data(json.utf8), valueField: "seconds", range: 0...2_592_000)
        }
        #expect(try body(#"{"seconds": 12.5}"#) == .set(12.5))
        #expect(try body(#"{"step": -3}"#) == .step(-3))
        let usage = #"(send {"seconds": N} with N from 0 to 2592000, or {"step": 1} or {"step": -1})"#
        let refused: [String: String] = [
            #"{"seconds": 1e400}"#: "the body is not a JSON object of numbers",
            #"{"step": 1e7}"#: "step: a whole number other than 0, at most 1000000 either way",
            #"{"step": 1.5}"#: "step: a whole number",
            #"{"step": 0}"#: "step: a whole number other than 0",
            #"{"seconds": -1}"#: "seconds out of range",
            #"{"seconds": 1, "step": 1}"#: "give one of seconds or step",
            #"{"second": 1}"#: #"unknown field "second""#,
            String(repeating: "[", count: 100_000): "the body is not a JSON object of numbers",
        ]
        for (json, start) in refused {
            #expect(throws: StageAdjustment.Refusal.self) { try body(json) }
            do { _ = try body(json) } catch {
                #expect(error.description.hasPrefix(start) && error.description.hasSuffix(usage), "\(error)")
            }
        }
    }

    @Test("the keys listen --help lists come from the stages")
    func keyHelp() {
        let help = PipelineFiles.keyHelp
        #expect(help.hasPrefix("space pauses and resumes (with a delay stage, as a time-shift), q quits"))
        #expect(help.contains("delay steps: [ (+10)") && help.contains("gain steps: 0 (+1), 9 (-1)"), "\(help)")
    }
}
