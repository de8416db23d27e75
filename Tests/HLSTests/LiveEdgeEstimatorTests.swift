import HLS
import Foundation
import Testing

/// A simulated live stream: segment n (2 s each, numbered from 0) is listed from
/// `origin + (n + 1) * 2 s` on, the playlist holding the newest `window` segments.
private struct SimulatedStream {
    var origin: Int64 = 1_000_000_000_000
    var segment: Int64 = 2_000_000_000
    var window = 5

    /// A poll whose server moment is `at` (answered `latency` later, sent `latency` before).
    func poll(at: Int64, latency: Int64 = 1_000_000) -> LiveEdgeEstimator.Poll {
        let listedThrough = Int((at - origin) / segment) - 1
        let first = max(0, listedThrough - window + 1)
        let count = max(0, listedThrough - first + 1)
        return .init(mediaSequence: first, durations: Array(repeating: Double(segment) / 1e9, count: count),
                     sent: at - latency, received: at + latency)
    }

    /// When the stream was `streamTime` past the start of segment `reference`.
    func instant(reference: Int, streamTime: UInt64) -> Int64 {
        origin + Int64(reference) * segment + Int64(streamTime)
    }
}

@Suite("Live-edge estimator")
struct LiveEdgeEstimatorTests {
    @Test("nothing is timed by the first poll, nor before a new segment")
    func firstPollTimesNothing() {
        let stream = SimulatedStream()
        var estimator = LiveEdgeEstimator()
        let timed = [9_100_000_000, 9_150_000_000].map { estimator.record(stream.poll(at: stream.origin + $0)) }
        #expect(timed == [false, false])
        #expect(estimator.appearances.isEmpty)
        #expect(estimator.edge(from: 0) == nil)
    }

    @Test("one appearance polled every 50 ms: within 25 ms")
    func oneAppearance() throws {
        let stream = SimulatedStream()
        var estimator = LiveEdgeEstimator()
        // Polls 50 ms apart, out of phase with the segments by 17 ms.
        var at = stream.origin + 9_017_000_000
        while estimator.appearances.isEmpty {
            estimator.record(stream.poll(at: at))
            at += 50_000_000
        }
        #expect(estimator.appearances.map(\.sequence) == [4])
        let edge = try #require(estimator.edge(from: 2))
        // Segment 4 ends 6 s after segment 2 starts.
        #expect(edge.streamTime == 6_000_000_000)
        let truth = stream.instant(reference: 2, streamTime: edge.streamTime)
        #expect(abs(edge.at - truth) <= 25_000_000, "off by \(Double(edge.at - truth) / 1e6) ms")
    }

    @Test("three appearances narrow it to the overlap of their spans")
    func threeAppearances() throws {
        let stream = SimulatedStream()
        var estimator = LiveEdgeEstimator()
        var at = stream.origin + 9_017_000_000
        var phases = [0, 31, 13, 44].makeIterator()
        while estimator.appearances.count < 3 {
            estimator.record(stream.poll(at: at))
            // Irregular poll timing, as a busy machine gives: each appearance lands elsewhere in its span.
            at += 50_000_000 + Int64(phases.next() ?? 7) * 100_000
        }
        let edge = try #require(estimator.edge(from: 3))
        let truth = stream.instant(reference: 3, streamTime: edge.streamTime)
        #expect(abs(edge.at - truth) <= 15_000_000, "off by \(Double(edge.at - truth) / 1e6) ms")
        #expect(edge.streamTime == 8_000_000_000)  // segments 3 through 6
    }

    @Test("two listeners polling out of phase agree on the edge")
    func listenersAgree() throws {
        let stream = SimulatedStream()
        var first = LiveEdgeEstimator(), second = LiveEdgeEstimator()
        var at = stream.origin + 8_400_000_000
        while first.appearances.count < 3 { first.record(stream.poll(at: at)); at += 50_000_000 }
        at = stream.origin + 13_333_000_000
        while second.appearances.count < 3 { second.record(stream.poll(at: at)); at += 50_000_000 }
        let a = try #require(first.edge(from: 4)), b = try #require(second.edge(from: 4))
        // The same moment of the stream, from the two estimates.
        let difference = (a.at - Int64(a.streamTime)) - (b.at - Int64(b.streamTime))
        #expect(abs(difference) <= 50_000_000, "\(Double(difference) / 1e6) ms")
    }

    @Test("on its own poll schedule: the first appearance timed to 6 ms, two listeners agree to 6 ms, in few polls")
    func ownSchedule() throws {
        let stream = SimulatedStream()
        /// Polls as the reader does (answered 1 ms after the server moment) until three appearances.
        func timed(from start: Int64) throws -> (first: LiveEdgeEstimator.Edge, polls: Int) {
            var estimator = LiveEdgeEstimator()
            var at = start, polls = 0
            var first: LiveEdgeEstimator.Edge?
            while estimator.isTiming, polls < 10_000 {
                estimator.record(stream.poll(at: at))
                polls += 1
                first = first ?? estimator.edge(from: 4)
                at += estimator.timingPollInterval(now: at + 1_000_000) + 1_000_000
            }
            return (try #require(first), polls)
        }
        let a = try timed(from: stream.origin + 8_400_000_000), b = try timed(from: stream.origin + 9_333_000_000)
        for edge in [a.first, b.first] {
            let truth = stream.instant(reference: 4, streamTime: edge.streamTime)
            #expect(abs(edge.at - truth) <= 6_000_000, "off by \(Double(edge.at - truth) / 1e6) ms")
        }
        let difference = (a.first.at - Int64(a.first.streamTime)) - (b.first.at - Int64(b.first.streamTime))
        #expect(abs(difference) <= 6_000_000, "\(Double(difference) / 1e6) ms")
        // Fine polls only around appearances: a 10 ms pace for at most one segment first, then a
        // window of well under half a second about each expected one.
        #expect(a.polls < 400 && b.polls < 400, "\(a.polls) and \(b.polls) polls")
    }

    @Test("a duration unknown between the reference and the timed segment: no estimate until learned")
    func needsEveryDuration() {
        let stream = SimulatedStream(window: 2)
        var estimator = LiveEdgeEstimator()
        var at = stream.origin + 20_010_000_000
        while estimator.appearances.isEmpty { estimator.record(stream.poll(at: at)); at += 50_000_000 }
        // The playlist no longer lists segment 5; the player's first playlist did.
        #expect(estimator.edge(from: 5) == nil)
        estimator.learn(mediaSequence: 5, durations: [2, 2, 2, 2])
        #expect(estimator.edge(from: 5)?.streamTime == 12_000_000_000)  // segments 5 through 10
    }

    @Test("a slow answer just before a segment appears does not pull the estimate out")
    func slowAnswer() throws {
        let stream = SimulatedStream()
        var estimator = LiveEdgeEstimator()
        var at = stream.origin + 9_020_000_000
        while estimator.appearances.count < 3 {
            var poll = stream.poll(at: at)
            // Answered at 11.97 s (before segment 5 appears at 12 s) but received 400 ms later:
            // timed by its middle, it says segment 5 was not there at 12.17 s.
            let slow = at == stream.origin + 11_970_000_000
            if slow { poll.received += 400_000_000 }
            estimator.record(poll)
            at += slow ? 450_000_000 : 50_000_000
        }
        let edge = try #require(estimator.edge(from: 0))
        let truth = stream.instant(reference: 0, streamTime: edge.streamTime)
        #expect(abs(edge.at - truth) <= 50_000_000, "off by \(Double(edge.at - truth) / 1e6) ms")
    }
}
