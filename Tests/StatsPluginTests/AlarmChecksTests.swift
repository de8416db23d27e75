import CastlineKit
import Foundation
import Testing
@testable import StagePlugins

/// The alarms stage's checks on media made here with faults at known times: when each alarm is
/// raised (its fault's start plus the hold), where it says the fault began and ended.
@Suite("alarm checks")
struct AlarmChecksTests {
    static let rate = 48_000

    @Test("a fault raises once its hold has passed, from where it began; it clears where it ended; once each")
    func heldCondition() {
        var condition = HeldCondition(kind: .silence, check: AlarmCheck(on: true, threshold: -60, hold: 2, clearAfter: 0))
        var changes: [AlarmChange] = []
        for step in 0..<100 {
            let start = Double(step) * 0.1
            let faulty = (3.0..<6.0).contains(start + 0.05) || (8.0..<9.0).contains(start + 0.05)
            if let change = condition.update(faulty: faulty, value: faulty ? -150 : -20, from: start, to: start + 0.1, worse: (<)) {
                changes.append(change)
            }
        }
        #expect(changes.count == 2, "the 1 s fault at 8 s is under the hold: \(changes)")
        #expect(changes.first?.edge == .raised && abs((changes.first?.since ?? 0) - 3) < 1e-9 && abs((changes.first?.at ?? 0) - 5) < 1e-9)
        #expect(changes.first?.value == -150)
        #expect(changes.last?.edge == .cleared && abs((changes.last?.at ?? 0) - 6) < 1e-9 && abs((changes.last?.since ?? 0) - 3) < 1e-9)
    }

    @Test("clipping: peaks under a second apart are one alarm, cleared a second after the last")
    func clearAfter() {
        var condition = HeldCondition(kind: .clipping, check: AlarmCheck(on: true, threshold: -1, hold: 0, clearAfter: 1))
        let peaks: Set = [10, 15, 18]
        var changes: [AlarmChange] = []
        for step in 0..<40 {
            let start = Double(step) * 0.1
            if let change = condition.update(faulty: peaks.contains(step), value: 0.5, from: start, to: start + 0.1, worse: (>)) {
                changes.append(change)
            }
        }
        #expect(changes.map(\.edge) == [.raised, .cleared], "\(changes)")
        #expect(abs((changes.last?.at ?? 0) - 1.9) < 1e-9, "the fault ended after the last peak, at 1.9 s")
        // Judged a second after it ended: told as that plays, its start on the wall clock is the raise's.
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let raisedAt = now.addingTimeInterval(-10)  // when the raise was told, as 1.1 s played
        let (raised, cleared) = (changes[0], changes[1])
        let told = raisedAt.addingTimeInterval((cleared.judged ?? 0) - raised.at)
        #expect(abs(cleared.wallSince(now: told).timeIntervalSince(raised.wallSince(now: raisedAt))) < 1e-6,
                "raised since \(raised.wallSince(now: raisedAt)), cleared since \(cleared.wallSince(now: told))")
    }

    /// Stereo: a 1 kHz sine of `peak` dBFS on both channels, or silence; `seconds` long.
    static func stereo(seconds: Double, peak: Double?, startingAt first: Int = 0) -> [Float] {
        let amplitude = peak.map { pow(10, $0 / 20) } ?? 0
        return (0..<Int(seconds * Double(rate))).flatMap { index -> [Float] in
            let value = Float(amplitude * sin(2 * Double.pi * 1000 * Double(first + index) / Double(rate)))
            return [value, value]
        }
    }

    /// Feeds `samples` in 20 ms buffers from `start` seconds; the changes and the time fed to.
    static func feed(_ checks: SoundChecks, _ samples: [Float], from start: Double) -> [AlarmChange] {
        let frames = samples.count / 2, chunk = rate / 50
        var changes: [AlarmChange] = []
        for first in stride(from: 0, to: frames, by: chunk) {
            let slice = samples[(first * 2)..<(min(first + chunk, frames) * 2)]
            changes += slice.withUnsafeBufferPointer { checks.feed($0, start: start + Double(first) / Double(rate)) }
        }
        return changes
    }

    @Test("silence: 6 s of it from 2 s raises at 7 s (5 s hold) and clears at 8 s, each within 10 ms")
    func silence() {
        let checks = SoundChecks(rate: Self.rate, channels: 2, settings: AlarmSettings())
        var changes = Self.feed(checks, Self.stereo(seconds: 2, peak: -20), from: 0)
        changes += Self.feed(checks, Self.stereo(seconds: 6, peak: nil), from: 2)
        changes += Self.feed(checks, Self.stereo(seconds: 2, peak: -20, startingAt: 8 * Self.rate), from: 8)
        let silence = changes.filter { $0.kind == .silence }
        #expect(silence.map(\.edge) == [.raised, .cleared], "\(changes)")
        #expect(abs((silence.first?.since ?? 0) - 2) <= 0.01 && abs((silence.first?.at ?? 0) - 7) <= 0.01, "\(silence)")
        #expect(abs((silence.last?.at ?? 0) - 8) <= 0.01, "\(silence)")
        #expect(silence.first?.value == SoundChecks.floor)
    }

    @Test("loudness: a stereo 1 kHz sine at -23 dBFS reads -23 LUFS (EBU Tech 3341); 10 LU louder is raised 3 s after its short-term loudness passes the target by 8 LU")
    func loudness() throws {
        let checks = SoundChecks(rate: Self.rate, channels: 2, settings: AlarmSettings())
        var changes = Self.feed(checks, Self.stereo(seconds: 10, peak: -23), from: 0)
        let steady = checks.figures()
        let integrated = try #require(steady[AlarmsStage.integrated.name])
        #expect(abs(integrated - -23) < 0.1, "\(steady)")
        #expect(abs((steady[AlarmsStage.shortTerm.name] ?? 0) - -23) < 0.1, "\(steady)")
        #expect(abs((steady[AlarmsStage.truePeak.name] ?? 0) - -23) < 0.5, "\(steady)")
        #expect(changes.isEmpty, "no alarm on a sound at the target: \(changes)")
        changes += Self.feed(checks, Self.stereo(seconds: 8, peak: -13, startingAt: 10 * Self.rate), from: 10)
        // The 3 s short-term window is 8 LU over once 1.77 s of the louder sound fill it.
        let loud = try #require(changes.first { $0.kind == .loud && $0.edge == .raised }, "\(changes)")
        #expect(abs(loud.since - 11.77) <= 0.15, "\(loud)")
        #expect(abs(loud.at - loud.since - 3) <= 0.11, "\(loud)")
        #expect(!changes.contains { $0.kind == .quiet || $0.kind == .silence || $0.kind == .clipping }, "\(changes)")
    }

    @Test("clipping: a sine whose true peak passes -1 dBTP raises at once")
    func clipping() throws {
        let checks = SoundChecks(rate: Self.rate, channels: 2, settings: AlarmSettings())
        var changes = Self.feed(checks, Self.stereo(seconds: 1, peak: -3), from: 0)
        #expect(changes.isEmpty, "\(changes)")
        changes += Self.feed(checks, Self.stereo(seconds: 1, peak: -0.5, startingAt: Self.rate), from: 1)
        let raised = try #require(changes.first { $0.kind == .clipping }, "\(changes)")
        #expect(raised.edge == .raised && abs(raised.since - 1) <= 0.03 && raised.value > -1, "\(raised)")
    }

    /// A GRAY8 frame of `width`x`height` filled with `luma` (rows `stride` apart), with an
    /// optional square of `mark` at column `x` so frames can differ.
    static func frame(_ luma: UInt8, width: Int = 64, height: Int = 36, stride: Int = 64, mark: (x: Int, value: UInt8)? = nil) -> [UInt8] {
        var bytes = [UInt8](repeating: luma, count: stride * height)
        if let mark {
            for row in 0..<16 { for column in mark.x..<(mark.x + 16) { bytes[row * stride + column] = mark.value } }
        }
        return bytes
    }

    @Test("black and frozen pictures: raised after their 2 s hold, from the first such frame; cleared at the first other")
    func picture() {
        var checks = PictureChecks(width: 64, height: 36, settings: AlarmSettings())
        var changes: [AlarmChange] = []
        let fps = 25.0
        for index in 0..<250 {
            let start = Double(index) / fps
            // Moving until 2 s; black 2-5 s; moving 5-6 s; still 6-9 s; moving after.
            let frame: [UInt8] = switch start {
            case 2..<5: Self.frame(16, mark: (x: index % 40, value: 30))
            case 6..<9: Self.frame(120, mark: (x: 10, value: 200))
            default: Self.frame(120, mark: (x: index % 40, value: 200))
            }
            changes += frame.withUnsafeBytes { checks.feed($0, offset: 0, stride: 64, start: start, end: start + 1 / fps) }
        }
        let black = changes.filter { $0.kind == .black }, frozen = changes.filter { $0.kind == .frozen }
        #expect(black.map(\.edge) == [.raised, .cleared], "\(changes)")
        #expect(abs((black.first?.since ?? 0) - 2) < 0.001 && abs((black.first?.at ?? 0) - 4.04) < 0.05 && abs((black.last?.at ?? 0) - 5) < 0.001,
                "\(black)")
        #expect(frozen.map(\.edge) == [.raised, .cleared], "the black frames move: only 6-9 s is frozen: \(changes)")
        #expect(abs((frozen.first?.since ?? 0) - 6) < 0.001 && abs((frozen.last?.at ?? 0) - 9) < 0.001, "\(frozen)")
    }

    /// A deterministic noise source (SplitMix64), so the signal is the same every run.
    struct Noise {
        var state: UInt64
        mutating func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double(z ^ (z >> 31)) / Double(UInt64.max) * 2 - 1
        }
    }

    @Test("ten minutes of a noisy, music-like signal near the target (beats, phrases, quiet passages): no alarm at all")
    func noFalseAlarms() {
        let rate = 24_000
        let checks = SoundChecks(rate: rate, channels: 2, settings: AlarmSettings())
        var noise = Noise(state: 35)
        var low = 0.0, changes: [AlarmChange] = []
        var buffer = [Float](repeating: 0, count: rate / 50 * 2)
        for chunk in 0..<(600 * 50) {
            for frame in 0..<(rate / 50) {
                let t = Double(chunk) / 50 + Double(frame) / Double(rate)
                // Pink-ish: white noise through a one-pole low-pass, with a bass note.
                low += 0.05 * (noise.next() - low)
                let beat = 0.6 + 0.4 * exp(-8 * t.truncatingRemainder(dividingBy: 0.5))
                // Phrases of 16 s, the last 4 s of each quieter by 10 dB.
                let phrase = t.truncatingRemainder(dividingBy: 16) < 12 ? 1.0 : 0.32
                let value = Float(2.5 * phrase * beat * (0.25 * low + 0.04 * sin(2 * Double.pi * 110 * t)))
                buffer[frame * 2] = value
                buffer[frame * 2 + 1] = value
            }
            changes += buffer.withUnsafeBufferPointer { checks.feed($0, start: Double(chunk) / 50) }
        }
        let figures = checks.figures()
        #expect(changes.isEmpty, "\(changes.prefix(5)) (\(figures))")
        let integrated = figures[AlarmsStage.integrated.name] ?? 0
        #expect(integrated > -30 && integrated < -16, "a signal near the target, as the test means it: \(figures)")
    }
}
