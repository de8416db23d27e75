@testable import CastlineKit
import Foundation
import GstKit
import Synchronization
import Testing

@Suite("--duration counts media, not the time a live source sent nothing", .timeLimit(.minutes(1)))
struct MediaLimitTests {
    init() { Gst.initialize() }

    @Test("4 s of 25 fps, 20 s of nothing, 4 s more: a 6 s limit ends 2 s after the gap, at the 150th frame")
    func outageIsNotMedia() async throws {
        let source = try AppSrc.make()
        source.configure(isLive: false)
        source.caps = try Caps("video/x-raw,format=GRAY8,width=2,height=2,framerate=25/1")
        let pass = try Element.make("identity")
        let sink = try AppSink.make()
        try sink.element.set("sync", false)
        let pipeline = Pipeline(name: "limit")
        defer { pipeline.setState(.null) }
        try pipeline.add(source.element, pass, sink.element)
        try source.element.link(pass)
        try pass.link(sink.element)
        let limit = MediaLimit()
        limit.set(.seconds(6))
        limit.watch(try #require(pass.staticPad("src")), at: .sinkInput)
        let taken = Mutex<[UInt64]>([])
        sink.onSample { sample in
            if let pts = sample.pts?.nanoseconds { taken.withLock { $0.append(pts) } }
            return .ok
        }
        #expect(pipeline.setState(.playing) != .failure)
        let frame: UInt64 = 40_000_000
        let stamps = (0..<100).map { UInt64($0) * frame } + (0..<100).map { 24_000_000_000 + UInt64($0) * frame }
        for pts in stamps {
            source.push([0, 0, 0, 0], pts: ClockTime(nanoseconds: pts), duration: ClockTime(nanoseconds: frame))
        }
        source.endOfStream()
        let bus = pipeline.bus
        let ended = bus.messages()
        let watchdog = Task { try await Task.sleep(for: .seconds(10)); bus.finish() }
        defer { watchdog.cancel() }
        for await message in ended { if case .endOfStream = message { break } }
        let seen = taken.withLock { $0 }
        // 100 frames before the gap (3.96 s of steps), the first after it counts its 40 ms, then 49 more.
        #expect(seen.count == 150, "\(seen.count) frames passed")
        #expect(seen.last == 24_000_000_000 + 49 * frame)
    }

    @Test("a stream with a unit every 5 s (slides, no durations): after the first step, each like it counts; an outage amid 25 fps does not")
    func sparseCadence() {
        var slides = MediaCount()
        for n: UInt64 in 0...6 { _ = slides.add(pts: n * 5_000_000_000, duration: nil) }
        // The first 5 s step could have been an outage, until the next like it shows it was the cadence.
        #expect(slides.counted == 30_000_000_000)
        var outage = MediaCount()
        for n: UInt64 in 0..<25 { _ = outage.add(pts: n * 40_000_000, duration: 40_000_000) }
        _ = outage.add(pts: 20_960_000_000, duration: 40_000_000)  // 20 s of nothing
        for n: UInt64 in 1...25 { _ = outage.add(pts: 20_960_000_000 + n * 40_000_000, duration: 40_000_000) }
        #expect(outage.counted == 960_000_000 + 40_000_000 + 1_000_000_000)
        // Two outages of about the same length, with media between them: neither counts.
        var twice = MediaCount()
        for start: UInt64 in [0, 10_000_000_000, 20_000_000_000] {
            for n: UInt64 in 0..<25 { _ = twice.add(pts: start + n * 40_000_000, duration: 40_000_000) }
        }
        #expect(twice.counted == 3 * 960_000_000 + 2 * 40_000_000)
        // Two outages of the same length with a single frame between: long steps amid short ones, no cadence.
        var backToBack = MediaCount()
        for n: UInt64 in 0..<25 { _ = backToBack.add(pts: n * 40_000_000, duration: 40_000_000) }
        _ = backToBack.add(pts: 20_960_000_000, duration: 40_000_000)
        _ = backToBack.add(pts: 40_960_000_000, duration: 40_000_000)
        #expect(backToBack.counted == 960_000_000 + 2 * 40_000_000)
        // Slides whose first two units came close together: three alike in a row show the cadence.
        var doubled = MediaCount()
        for pts: UInt64 in [0, 40_000_000] + (1...5).map({ 40_000_000 + $0 * 5_000_000_000 }) { _ = doubled.add(pts: pts, duration: nil) }
        #expect(doubled.counted == 40_000_000 + 25_000_000_000)
    }

    @Test("a reordered frame's step back is not counted twice; a jump back starts a new span")
    func reorderAndJumpBack() {
        var count = MediaCount()
        for pts: UInt64 in [0, 120, 40, 80, 240, 160, 200] { _ = count.add(pts: (10_000 + pts) * 1_000_000, duration: 40_000_000) }
        #expect(count.counted == 240_000_000)
        _ = count.add(pts: 100_000_000, duration: 40_000_000)  // an HLS discontinuity to earlier timestamps
        _ = count.add(pts: 140_000_000, duration: 40_000_000)
        #expect(count.counted == 320_000_000)
        // A stream that starts 4 s into the time line (an audio rendition a segment ahead of its
        // video) has 4 s counted from its first unit: the limit ends both at the same time.
        var late = MediaCount()
        #expect(late.add(pts: 14_000_000_000, duration: 40_000_000, start: 10_000_000_000) == 4_000_000_000)
    }
}
