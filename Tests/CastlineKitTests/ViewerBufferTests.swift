import CastlineKit
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
}
