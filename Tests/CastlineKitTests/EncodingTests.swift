import CastlineKit
import Synchronization
import TestSupport
import Testing

@Suite("Encoders", .noGStreamerCriticals)
struct EncodingTests {
    /// Runs `frames` frames of a 30 fps pattern through the H.264 encoder bin and
    /// returns the frame indexes of the keyframes that came out.
    func keyframes(interval: Duration, frames: Int) throws -> [Int] {
        let pipeline = try Gst.parseLaunch(
            "videotestsrc num-buffers=\(frames) ! video/x-raw,width=320,height=240,framerate=30/1 ! fakesink name=out")
        var settings = VideoEncoding()
        settings.keyframeInterval = interval
        let encoder = try Encoders.videoBin(settings, name: "encoder")
        // Put the encoder between the source's caps filter and the sink.
        let out = try #require(pipeline.element(named: "out"))
        let upstream = try #require(out.staticPad("sink")?.peer?.parentElement)
        upstream.unlink(out)
        try pipeline.add(encoder)
        try upstream.link(encoder)
        try encoder.link(out)
        let seen = Mutex<[Int]>([])
        let index = Mutex(0)
        out.staticPad("sink")?.addProbe(.buffer) { info in
            let frame = index.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            if let buffer = info.buffer, !buffer.isDelta { seen.withLock { $0.append(frame) } }
            return .ok
        }
        pipeline.setState(.playing)
        defer { pipeline.setState(.null) }
        while let message = pipeline.bus.pop(timeout: .seconds(20)) {
            if case .endOfStream = message { break }
            if case .error(_, let text, _, _) = message { Issue.record("\(text)"); break }
        }
        return seen.withLock { $0 }
    }

    @Test("the keyframe interval is kept in time, whatever the frame rate")
    func keyframeInterval() throws {
        #expect(try keyframes(interval: .seconds(2), frames: 130) == [0, 60, 120])
        #expect(try keyframes(interval: .seconds(1), frames: 65) == [0, 30, 60])
    }
}
