@testable import CastlineKit
import Testing

@Suite("a publish's far end that stops taking the stream, told from its byte counts")
struct FarEndWatchTests {
    let start = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    @Test("acknowledged as it goes: nothing said; two windows unacknowledged for 10 s: stopped since the first was due")
    func acknowledgements() {
        var watch = FarEndWatch()
        let window: UInt64 = 1_000_000
        // 1 MB a second, acknowledged a window at a time.
        for second in 0...6 {
            let sent = UInt64(second) * 1_000_000
            #expect(watch.read(WriteProgress(sent: sent, acked: sent / window * window, window: window), mediaCame: at(Double(second)),
                               at: at(Double(second))) == nil)
        }
        // The acknowledgements stop at 6 MB; due again at 7.5 MB (a window and a half); two windows past
        // and 10 s without one is plain.
        var stopped: ContinuousClock.Instant?
        for second in 7...20 where stopped == nil {
            stopped = watch.read(WriteProgress(sent: UInt64(second) * 1_000_000 + 1, acked: 6_000_000, window: window),
                                 mediaCame: at(Double(second)), at: at(Double(second)))
        }
        #expect(stopped == at(8))
    }

    @Test("a slow uplink whose acknowledgements lag two windows behind but keep coming; a counter past nginx's reset: nothing said")
    func laggingAcknowledgements() {
        var watch = FarEndWatch()
        let window: UInt64 = 1_000_000
        for second in 0...60 {
            // Sent runs 2.5 windows ahead; an acknowledgement comes every 4 s.
            let sent = UInt64(second) * 500_000 + 2_500_000
            let acked = UInt64(second / 4 * 4) * 500_000
            #expect(watch.read(WriteProgress(sent: sent, acked: acked, window: window), mediaCame: at(Double(second)),
                               at: at(Double(second))) == nil, "second \(second)")
        }
        var reset = FarEndWatch()
        for second in 0...30 {
            let progress = WriteProgress(sent: UInt64(second) * 1_000_000, acked: 300_000_000, window: window)
            #expect(reset.read(progress, mediaCame: at(Double(second)), at: at(Double(second))) == nil)
        }
    }

    @Test("writes that stop while media comes: stopped since the last write, after 5 s; no media coming is not a stop")
    func writesStop() {
        var watch = FarEndWatch()
        #expect(watch.read(WriteProgress(sent: 100, acked: 0, window: 2_500_000), mediaCame: at(0), at: at(0)) == nil)
        #expect(watch.read(WriteProgress(sent: 200, acked: 0, window: 2_500_000), mediaCame: at(1), at: at(1)) == nil)
        var paused = watch
        #expect(paused.read(WriteProgress(sent: 200, acked: 0, window: 2_500_000), mediaCame: at(1), at: at(9)) == nil)
        #expect(paused.quietSince(mediaCame: at(1), at: at(9)) == nil)
        #expect(watch.read(WriteProgress(sent: 200, acked: 0, window: 2_500_000), mediaCame: at(5.5), at: at(5.5)) == nil)
        #expect(watch.quietSince(mediaCame: at(5.5), at: at(5.5)) == at(1))
        #expect(watch.read(WriteProgress(sent: 200, acked: 0, window: 2_500_000), mediaCame: at(6), at: at(6)) == at(1))
    }
}
