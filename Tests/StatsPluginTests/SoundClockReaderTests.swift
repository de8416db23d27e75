import CastlineKit
import Foundation
import Testing
@testable import StagePlugins

/// The sound clock read back from samples made as the test source makes them (`SoundClock`):
/// what an encoder's dropout may take away, and what must never be read as a number.
@Suite("the sound clock's reader")
struct SoundClockReaderTests {
    static let rate = 48_000, tone = 1000.0

    /// Mono samples from `from` to `to` seconds of wall time: the tone at `volume` (the test
    /// source's default), each second's beep and code as the test source writes them.
    static func signal(from: Double, to: Double, volume: Double = 0.08) -> [Float] {
        let beep = SoundClock.beepLevel(volume: volume)
        return (0..<Int((to - from) * Double(rate))).map { index in
            let wall = from + Double(index) / Double(rate)
            let number = Int64(wall.rounded(.down))
            let multiple = SoundClock.multiple(at: wall - Double(number), bits: SoundClock.bits(number))
            return Float((multiple == 2 ? beep : volume) * sin(2 * Double.pi * tone * (multiple ?? 1) * wall))
        }
    }

    /// The marks read, fed in 1024-sample buffers from running time 0.
    static func read(_ samples: [Float]) -> [SoundClockReader.Mark] {
        var reader = SoundClockReader(rate: rate, tone: tone)
        var marks: [SoundClockReader.Mark] = []
        for first in stride(from: 0, to: samples.count, by: 1024) {
            let part = Array(samples[first..<min(samples.count, first + 1024)])
            let start = UInt64((Double(first) / Double(rate) * 1e9).rounded())
            marks += part.withUnsafeBufferPointer { reader.feed($0, channels: 1, start: start) }
        }
        return marks
    }

    @Test("each mark's number (low 10 bits) and its start to a quarter of a millisecond")
    func readsEveryMark() {
        // From before second 1000 (low bits 1000 & 1023 = 1000) to after second 1003; the
        // sound starting at several points of a window, so beeps start within one too. (Windows
        // of 2.5 ms, which the 1 kHz tone does not fill in whole cycles, put them up to 2 ms early.)
        for lead in [0.5, 0.5007, 0.5013, 0.5019] {
            let marks = Self.read(Self.signal(from: 1000 - lead, to: 1003.6))
            #expect(marks.map(\.low) == [1000, 1001, 1002, 1003])
            for (index, mark) in marks.enumerated() {
                let expected = (lead + Double(index)) * 1e9
                #expect(abs(Double(mark.start) - expected) < 0.25e6, "starting \(lead) s before: \(mark)")
            }
        }
    }

    @Test("read at any level: the tone near full scale, at its default, 30 dB under it (a gain stage, a quiet re-encode)")
    func readsAtAnyLevel() {
        for volume in [0.33, 0.08, 0.0025] {
            let marks = Self.read(Self.signal(from: 999.5, to: 1002.6, volume: volume))
            #expect(marks.map(\.low) == [1000, 1001, 1002], "tone at \(volume): \(marks)")
        }
        // Under -60 dBFS there is no clock to read, and noise must not be taken for one.
        #expect(Self.read(Self.signal(from: 999.5, to: 1002.6, volume: 0.0002)).isEmpty)
    }

    @Test("a code slot lost to an encoder's 25 ms dropout is told by the parity; two are not guessed")
    func oneSlotLost() {
        var samples = Self.signal(from: 999.5, to: 1002.6)
        // Second 1000: silence over its fourth slot. Second 1001: over its second and ninth.
        func silence(_ from: Double, _ length: Double) {
            let first = Int(from * Double(Self.rate))
            for index in first..<(first + Int(length * Double(Self.rate))) { samples[index] = 0 }
        }
        silence(0.5 + SoundClock.codeStart + 3 * SoundClock.slot + 0.002, 0.025)
        silence(1.5 + SoundClock.codeStart + 1 * SoundClock.slot + 0.002, 0.025)
        silence(1.5 + SoundClock.codeStart + 8 * SoundClock.slot + 0.002, 0.025)
        #expect(Self.read(samples).map(\.low) == [1000, 1002])
    }

    @Test("a slot that holds the plain tone is not taken for a dropout: the code is refused")
    func toneInASlot() {
        var samples = Self.signal(from: 999.5, to: 1001.6)
        // Second 1000's sixth slot: the tone, as a code read a slot out of place would find.
        let first = Int((0.5 + SoundClock.codeStart + 5 * SoundClock.slot) * Double(Self.rate))
        for index in first..<(first + Int(SoundClock.slot * Double(Self.rate))) {
            let wall = 999.5 + Double(index) / Double(Self.rate)
            samples[index] = Float(0.08 * sin(2 * Double.pi * Self.tone * wall))
        }
        #expect(Self.read(samples).map(\.low) == [1001])
    }

    @Test("a beep already sounding when the sound starts is not read: its code's timing is unknown")
    func beepCutAtStart() {
        // Starting 30 ms into second 1000's beep: read from there, the code would be a slot late
        // and its last slot unheard, which the parity would then fill in with a wrong number.
        for offset in [0.0, 0.010, 0.030, 0.060] {
            let marks = Self.read(Self.signal(from: 1000 + offset, to: 1002.6))
            #expect(marks.map(\.low) == [1001, 1002], "starting \(offset) s into the beep: \(marks)")
        }
    }

    @Test("the parity: any one bit unheard is recovered, one bit wrong is refused")
    func parity() {
        for number in [0, 1, 341, 682, 1023] as [Int64] {
            let bits = SoundClock.bits(number)
            #expect(SoundClock.number(from: bits) == Int(number))
            for lost in bits.indices {
                var heard: [Bool?] = bits
                heard[lost] = nil
                #expect(SoundClock.number(from: heard) == Int(number))
                var wrong: [Bool?] = bits
                wrong[lost]?.toggle()
                #expect(SoundClock.number(from: wrong) == nil)
            }
            var twoLost: [Bool?] = bits
            twoLost[0] = nil
            twoLost[5] = nil
            #expect(SoundClock.number(from: twoLost) == nil)
        }
    }
}
