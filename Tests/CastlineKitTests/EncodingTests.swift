import CastlineKit
import Synchronization
import TestSupport
import Testing

@Suite("Encoders", .noGStreamerCriticals)
struct EncodingTests {
    /// Runs `frames` frames of a 30 fps pattern through the H.264 encoder bin made of `settings`;
    /// `each` sees every encoded buffer with its index.
    func encode(_ settings: VideoEncoding, frames: Int, each: @escaping @Sendable (Int, BufferView) -> Void) throws {
        let pipeline = try Gst.parseLaunch(
            "videotestsrc num-buffers=\(frames) ! video/x-raw,width=320,height=240,framerate=30/1 ! fakesink name=out")
        let encoder = try Encoders.videoBin(settings, name: "encoder")
        // Put the encoder between the source's caps filter and the sink.
        let out = try #require(pipeline.element(named: "out"))
        let upstream = try #require(out.staticPad("sink")?.peer?.parentElement)
        upstream.unlink(out)
        try pipeline.add(encoder)
        try upstream.link(encoder)
        try encoder.link(out)
        let index = Mutex(0)
        out.staticPad("sink")?.addProbe(.buffer) { info in
            let frame = index.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            if let buffer = info.buffer { each(frame, buffer) }
            return .ok
        }
        pipeline.setState(.playing)
        defer { pipeline.setState(.null) }
        while let message = pipeline.bus.pop(timeout: .seconds(20)) {
            if case .endOfStream = message { break }
            if case .error(_, let text, _, _) = message { Issue.record("\(text)"); break }
        }
    }

    /// The frame indexes of the keyframes that come out.
    func keyframes(interval: Duration, frames: Int) throws -> [Int] {
        var settings = VideoEncoding()
        settings.keyframeInterval = interval
        let seen = Mutex<[Int]>([])
        try encode(settings, frames: frames) { frame, buffer in
            if !buffer.isDelta { seen.withLock { $0.append(frame) } }
        }
        return seen.withLock { $0 }
    }

    /// The settings x264 says it encoded with: the text it writes into the stream's first
    /// frame (an SEI: "... threads=1 ... qpmin=20 ...").
    func x264Settings(threads: Int, qpMin: Int) throws -> String {
        var settings = VideoEncoding()
        (settings.threads, settings.qpMin) = (threads, qpMin)
        let first = Mutex<String>("")
        try encode(settings, frames: 3) { frame, buffer in
            guard frame == 0 else { return }
            first.withLock { $0 = buffer.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } ?? "" }
        }
        // From "options: " to the end of the SEI's text.
        let frame = first.withLock { $0 }
        guard let start = frame.range(of: "options: ")?.lowerBound else { return "" }
        return String(frame[start...].prefix { $0.isASCII && !$0.isNewline && $0 >= " " }) + " "
    }

    @Test("the keyframe interval is kept in time, whatever the frame rate")
    func keyframeInterval() throws {
        #expect(try keyframes(interval: .seconds(2), frames: 130) == [0, 60, 120])
        #expect(try keyframes(interval: .seconds(1), frames: 65) == [0, 30, 60])
    }

    @Test("threads and qp-min reach x264: the stream says it was encoded with them")
    func threadsAndQPMinReachX264() throws {
        let asked = try x264Settings(threads: 1, qpMin: 20)
        #expect(asked.contains(" threads=1 ") && asked.contains(" qpmin=20 "), "x264 wrote: \(asked)")
        let defaults = try x264Settings(threads: 0, qpMin: 0)
        #expect(defaults.contains(" qpmin=0 "), "x264 wrote: \(defaults)")
    }
}
