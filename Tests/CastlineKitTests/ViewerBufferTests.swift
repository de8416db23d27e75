@testable import CastlineKit
import Foundation
import Testing

@Suite("a simulated viewer's buffer and the load test's percentiles")
struct ViewerBufferTests {
    @Test("the first segment is the first frame; segments that come in time never stall")
    func steady() {
        var buffer = ViewerBuffer(resumeAhead: 2)
        buffer.segmentFetched(duration: 2, at: 0.3)
        #expect(buffer.firstFrame == 0.3)
        for (index, time) in stride(from: 1.9, through: 20, by: 2).enumerated() {
            buffer.segmentFetched(duration: 2, at: time)
            #expect(buffer.stalls == 0, "segment \(index)")
        }
        #expect(buffer.stalledSeconds(at: 20) == 0)
    }

    @Test("a segment late by more than the buffer holds: one stall, from where the buffer ran out to when enough came to play on")
    func lateSegment() {
        var buffer = ViewerBuffer(resumeAhead: 2)
        buffer.segmentFetched(duration: 2, at: 0)
        buffer.segmentFetched(duration: 2, at: 0.1)  // 4 s to play: runs out at 4.0
        buffer.advance(to: 5)
        #expect(buffer.stalls == 1 && buffer.isStalled)
        #expect(abs(buffer.stalledSeconds(at: 5) - 1) < 1e-9, "a stall under way counts as it lasts")
        buffer.segmentFetched(duration: 2, at: 7.5)
        #expect(!buffer.isStalled && buffer.stalls == 1)
        #expect(abs(buffer.stalledSeconds(at: 9) - 3.5) < 1e-9)
    }

    @Test("a variant and its audio rendition: the first frame once both have a segment; audio running dry stalls the player though the video is ahead")
    func audioRendition() {
        var joint = TrackedBuffer(tracks: 2, resumeAhead: 2)
        joint.segmentFetched(track: 0, duration: 2, at: 0.1, programDateTime: nil)
        #expect(joint.buffer.firstFrame == nil)
        joint.segmentFetched(track: 1, duration: 2, at: 0.4, programDateTime: nil)
        #expect(joint.buffer.firstFrame == 0.4)
        joint.segmentFetched(track: 0, duration: 2, at: 1, programDateTime: nil)
        #expect(abs(joint.ahead(of: 0) - 3.4) < 1e-9 && abs(joint.buffer.ahead - 1.4) < 1e-9)
        // The audio's next segment comes at 4.4: it ran out at 2.4.
        joint.advance(to: 3)
        #expect(joint.buffer.stalls == 1)
        joint.segmentFetched(track: 1, duration: 2, at: 4.4, programDateTime: nil)
        #expect(!joint.buffer.isStalled && abs(joint.buffer.stalledSeconds(at: 4.4) - 2) < 1e-9)
    }

    @Test("a stalled player waits for `resumeAhead` of media before it plays on")
    func resumeThreshold() {
        var buffer = ViewerBuffer(resumeAhead: 4)
        buffer.segmentFetched(duration: 2, at: 0)
        buffer.segmentFetched(duration: 2, at: 3)  // ran out at 2.0
        #expect(buffer.isStalled)
        buffer.segmentFetched(duration: 2, at: 3.5)
        #expect(!buffer.isStalled)
        #expect(abs(buffer.stalledSeconds(at: 3.5) - 1.5) < 1e-9)
    }

    @Test("percentiles by nearest rank")
    func percentiles() throws {
        let values = (1...100).map(Double.init)
        let ranks = try #require(Percentiles(values))
        #expect(ranks.p50 == 50 && ranks.p95 == 95 && ranks.p99 == 99)
        #expect(Percentiles([]) == nil)
        #expect(Percentiles([7])?.p99 == 7)
    }

    @Test("the programme time played: each segment's EXT-X-PROGRAM-DATE-TIME plus what of it played; a stall holds it still")
    func programDateTime() throws {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var buffer = ViewerBuffer(resumeAhead: 2)
        #expect(buffer.programDateTime == nil)
        buffer.segmentFetched(duration: 2, at: 0, programDateTime: start)
        buffer.segmentFetched(duration: 2, at: 0, programDateTime: start.addingTimeInterval(2))
        // A gap in the programme (a segment the origin skipped): the date jumps where that segment begins.
        buffer.segmentFetched(duration: 2, at: 0, programDateTime: start.addingTimeInterval(10))
        buffer.advance(to: 1.5)
        #expect(try #require(buffer.programDateTime).timeIntervalSince(start) == 1.5)
        buffer.advance(to: 4.5)
        #expect(try #require(buffer.programDateTime).timeIntervalSince(start) == 10.5)
        buffer.advance(to: 9)  // ran out at 6, stalled since
        #expect(buffer.isStalled && buffer.programDateTime?.timeIntervalSince(start) == 12)
        buffer.segmentFetched(duration: 2, at: 9, programDateTime: start.addingTimeInterval(12))
        buffer.advance(to: 10)
        #expect(buffer.programDateTime?.timeIntervalSince(start) == 13, "latency (wall minus this) grew by the 3 s stalled")
    }

    @Test("the fetch histogram: fixed memory, each percentile a recorded value within 1 % of the exact one")
    func histogram() throws {
        var generator = SystemRandomNumberGenerator()
        let values = (0..<20_000).map { _ in exp(Double.random(in: log(0.0005)...log(50), using: &generator)) }
        var histogram = SecondsHistogram()
        values.forEach { histogram.record($0) }
        let exact = try #require(Percentiles(values))
        let binned = try #require(Percentiles(histogram))
        for (binnedValue, exactValue) in [(binned.p50, exact.p50), (binned.p95, exact.p95), (binned.p99, exact.p99)] {
            #expect(binnedValue >= exactValue && binnedValue <= exactValue * 1.01 + 0.001, "\(binnedValue) against \(exactValue)")
            #expect(values.contains(binnedValue))
        }
        #expect(histogram.count == values.count && SecondsHistogram().percentile(0.5) == nil)
        var outside = SecondsHistogram()
        [0, 1e-9, 5000, .infinity].forEach { outside.record($0) }
        #expect(outside.count == 3 && outside.percentile(1) == 5000, "the end buckets take what lies beyond; no infinity")
    }

    @Test("a viewer that stops while stalled keeps that stall in the totals, and its time up to the stop")
    func stopWhileStalled() {
        let tally = LoadTally()
        let began = ContinuousClock.now
        tally.started(1, at: began)
        var buffer = ViewerBuffer(resumeAhead: 1)
        buffer.segmentFetched(duration: 2, at: 0)
        tally.fetched(1, buffer: buffer, seconds: nil, bytes: 100)
        tally.finished(1, at: began + .seconds(5))
        let totals = tally.totals(at: began + .seconds(9))
        #expect(totals.stalls == 1 && abs(totals.stalledSeconds - 3) < 1e-6, "\(totals.stalls) stalls, \(totals.stalledSeconds) s")
        #expect(totals.fetch == nil, "a stream's media is no fetch")
    }

    @Test("a buffer that runs out just as the next segment comes does not stall")
    func runsOutAsTheNextComes() {
        var buffer = ViewerBuffer(resumeAhead: 2)
        buffer.segmentFetched(duration: 2, at: 0)
        buffer.segmentFetched(duration: 2, at: 2)
        buffer.segmentFetched(duration: 2, at: 4)
        #expect(buffer.stalls == 0 && buffer.stalledSeconds(at: 4) == 0)
    }

    @Test("the test's end: what viewers do while they wind down after it (a buffer run dry, a run torn down) is no stall")
    func windingDown() {
        let tally = LoadTally()
        let began = ContinuousClock.now
        tally.started(1, at: began)
        tally.started(2, at: began)
        var buffer = ViewerBuffer(resumeAhead: 1)
        buffer.segmentFetched(duration: 2, at: 0)
        buffer.segmentFetched(duration: 2, at: 1.9)
        tally.fetched(1, buffer: buffer, seconds: nil, bytes: 100)
        tally.decoded(2, entered: .playing, at: 0.5)
        tally.decoded(2, latency: 4, at: 1)
        tally.end(at: began + .seconds(3.9))
        tally.decoded(2, entered: .reconnecting, at: 4.5)
        tally.decoded(2, latency: 9, at: 4.6)
        tally.finished(1, at: began + .seconds(4.5))
        tally.finished(2, at: began + .seconds(4.7))
        let totals = tally.totals(at: began + .seconds(5))
        #expect(totals.stalls == 0 && totals.stalledSeconds == 0, "\(totals)")
        #expect(totals.active == 0 && totals.liveLatencies.isEmpty, "\(totals)")
        let running = LoadTally()
        running.started(2, at: began)
        running.decoded(2, entered: .playing, at: 0.5)
        running.decoded(2, latency: 4, at: 1)
        running.end(at: began + .seconds(3))
        #expect(running.totals(at: began + .seconds(5)).liveLatencies == [4], "a viewer not yet stopped reads as at the end")
    }

    @Test("a decoded viewer's run: its first PLAYING is the first frame, each buffering until PLAYING a stall; its latency grows while held")
    func decodedTimeline() {
        let tally = LoadTally()
        let began = ContinuousClock.now
        tally.started(1, at: began)
        tally.decoded(1, entered: .connecting, at: 0)
        tally.decoded(1, entered: .buffering, at: 0.2)
        tally.decoded(1, entered: .playing, at: 0.4)
        tally.decoded(1, latency: 7, at: 1)
        tally.decoded(1, entered: .buffering, at: 5)
        // Held, the run measures nothing new.
        tally.decoded(1, latency: 7, at: 6)
        var totals = tally.totals(at: began + .seconds(7))
        #expect(totals.firstFrame?.p50 == 0.4 && totals.stalls == 1 && totals.stalledNow == 1, "\(totals)")
        #expect(abs(totals.stalledSeconds - 2) < 1e-6 && abs((totals.liveLatencyMean ?? 0) - 9) < 1e-6, "\(totals)")
        tally.decoded(1, entered: .playing, at: 8)
        tally.decoded(1, latency: 10, at: 9)
        totals = tally.totals(at: began + .seconds(10))
        #expect(totals.stalls == 1 && abs(totals.stalledSeconds - 3) < 1e-6 && totals.playingNow == 1, "\(totals)")
        #expect(abs(totals.rebufferRatio - 3 / 9.6) < 1e-6 && totals.liveLatencyMean == 10, "\(totals)")
    }
}
