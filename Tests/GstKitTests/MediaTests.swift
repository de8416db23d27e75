import Foundation
import TestSupport
import Testing
import GstKit

@Suite struct MediaTests {
    @Test func levelPostsElementMessagesWithRMS() throws {
        let pipeline = try Gst.parseLaunch(
            "audiotestsrc num-buffers=20 ! audio/x-raw,channels=2 ! level name=meter interval=50000000 post-messages=true ! fakesink")
        defer { pipeline.setState(.null) }
        pipeline.setState(.playing)
        let messages = drainBus(pipeline)
        #expect(errorText(messages) == nil)
        let levels = messages.compactMap { message -> Structure? in
            guard case .element(let source, let structure) = message, structure.name == "level" else { return nil }
            #expect(source == "meter")
            return structure
        }
        #expect(levels.count >= 3)
        let rms = try #require(levels.first?.doubles("rms"))
        #expect(rms.count == 2)
        #expect(rms.allSatisfy { $0 < 0 && $0 > -60 })  // a sine at volume 0.8 is loud
        #expect(levels.first?.clockTime("timestamp") != nil)
        #expect(levels.first?.doubles("timestamp") == nil)  // not a list
    }

    /// Writes a short WAV file with GStreamer itself.
    private func makeWAV() throws -> String {
        let path = temporaryPath(".wav")
        let writer = try Gst.parseLaunch("audiotestsrc num-buffers=50 ! wavenc ! filesink location=\(path)")
        defer { writer.setState(.null) }
        writer.setState(.playing)
        let messages = drainBus(writer)
        try #require(messages.contains(where: isEOS), "writing the WAV failed: \(errorText(messages) ?? "timeout")")
        return path
    }

    @Test func decodebinPadAdded() throws {
        let path = try makeWAV()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pipeline = Pipeline()
        defer { pipeline.setState(.null) }
        let source = try Element.make("filesrc")
        try source.set("location", path)
        let decoder = try Element.make("decodebin")
        let convert = try Element.make("audioconvert")
        let sink = try Element.make("fakesink")
        try pipeline.add(source, decoder, convert, sink)
        try source.link(decoder)
        try convert.link(sink)

        let added = Shared<[String]>([]), linkErrors = Shared<[String]>([]), noMorePads = Shared(false)
        let released = Shared(false)
        let tracker = ReleaseTracker(released)
        decoder.onPadAdded { pad in
            _ = tracker
            added.update { $0.append(pad.currentCaps?.mediaType ?? "?") }
            guard let target = convert.staticPad("sink") else { return }
            do { try pad.link(target) } catch { linkErrors.update { $0.append("\(error)") } }
        }
        decoder.onNoMorePads { noMorePads.update { $0 = true } }
        pipeline.setState(.playing)
        let messages = drainBus(pipeline)
        #expect(errorText(messages) == nil)
        #expect(messages.contains(where: isEOS))
        #expect(added.value == ["audio/x-raw"])
        #expect(linkErrors.value.isEmpty)
        #expect(noMorePads.value)
        #expect((pipeline.queryDuration()?.seconds ?? 0) > 0.5)
        #expect(!released.value)
    }

    @Test func signalHandlersAreReleased() throws {
        let released = Shared(false), disconnected = Shared(false)
        do {
            let decoder = try Element.make("decodebin")
            let tracker = ReleaseTracker(released)
            decoder.onPadAdded { _ in _ = tracker }
        }
        #expect(released.value)  // element finalized: GClosureNotify ran

        let bin = Bin()
        let added = Shared<[String]>([])
        let handler = try bin.connect("element-added") { argument in
            if case .element(let element) = argument { added.update { $0.append(element.name) } }
        }
        try bin.add(try Element.make("fakesink", name: "first"))
        do {
            let tracker = ReleaseTracker(disconnected)
            let other = try bin.connect("element-removed") { _ in _ = tracker }
            bin.disconnect(other)
        }
        #expect(disconnected.value)
        bin.disconnect(handler)
        try bin.add(try Element.make("fakesink", name: "second"))
        #expect(added.value == ["first"])
        #expect(throws: GstError.self) { try bin.connect("no-such-signal") { _ in } }
    }

    @Test func appSrcToAppSinkRoundTrip() throws {
        let pipeline = Pipeline()
        defer { pipeline.setState(.null) }
        let source = try AppSrc.make(name: "in")
        source.caps = try Caps("application/x-castline-test")
        source.configure(isLive: false)
        let sink = try AppSink.make(name: "out")
        try sink.element.set("sync", false)
        try pipeline.add(source.element, sink.element)
        try source.element.link(sink.element)
        #expect(source.caps?.mediaType == "application/x-castline-test")
        pipeline.setState(.playing)

        let payloads: [[UInt8]] = (0..<5).map { i in (0..<(10 + i)).map { UInt8(truncatingIfNeeded: $0 * 7 + i) } }
        for (i, bytes) in payloads.enumerated() {
            let result = source.push(bytes, pts: ClockTime(seconds: Double(i) * 0.1),
                                     duration: ClockTime(seconds: 0.1), isDelta: i % 2 == 1)
            #expect(result == .ok)
        }
        #expect(source.endOfStream() == .ok)

        for (i, bytes) in payloads.enumerated() {
            let sample = try #require(sink.pullSample(timeout: .seconds(5)))
            #expect(sample.data == bytes)
            #expect(sample.size == bytes.count)
            #expect(sample.pts == ClockTime(seconds: Double(i) * 0.1))
            #expect(sample.duration == ClockTime(seconds: 0.1))
            #expect(sample.isDelta == (i % 2 == 1))
            #expect(sample.caps?.mediaType == "application/x-castline-test")
        }
        #expect(sink.pullSample(timeout: .seconds(1)) == nil)
        #expect(sink.isEOS)
    }

    @Test func appSinkCallbackAndNeedData() throws {
        let pipeline = Pipeline()
        defer { pipeline.setState(.null) }
        let source = try AppSrc.make()
        source.caps = try Caps("application/x-castline-test")
        source.configure(isLive: false, maxBytes: 1000)
        let sink = try AppSink.make()
        try sink.element.set("sync", false)
        try pipeline.add(source.element, sink.element)
        try source.element.link(sink.element)

        let pushed = Shared(0), received = Shared<[ClockTime?]>([]), released = Shared(false)
        source.onNeedData { _ in
            let n = pushed.update { n in defer { n += 1 }; return n }
            if n < 8 {
                source.push([UInt8(n)], pts: ClockTime(seconds: Double(n)), duration: ClockTime(seconds: 1))
            } else if n == 8 {
                source.endOfStream()
            }
        }
        source.onEnoughData {}
        do {
            let tracker = ReleaseTracker(released)
            sink.onSample { sample in
                _ = tracker
                received.update { $0.append(sample.pts) }
                return .ok
            }
        }
        pipeline.setState(.playing)
        #expect(drainBus(pipeline).contains(where: isEOS))
        #expect(received.value == (0..<8).map { ClockTime(seconds: Double($0)) })
        sink.onSample { _ in .ok }  // replacing the handler releases the old one
        #expect(released.value)
    }

    @Test func requestPadsGhostPadsAndApplicationMessages() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc is-live=true ! tee name=t allow-not-linked=true")
        defer { pipeline.setState(.null) }
        let tee = try #require(pipeline.element(named: "t"))
        let branchPad = try #require(tee.requestPad("src_%u"))
        #expect(branchPad.direction == .src)
        #expect(tee.pads.contains(branchPad))

        // A branch added while the pipeline runs, through a ghost pad on a bin.
        pipeline.setState(.playing)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .playing)
        let branch = Bin(name: "branch")
        let queue = try Element.make("queue")
        let sink = try Element.make("fakesink")
        try branch.add(queue, sink)
        try queue.link(sink)
        let ghost = try branch.addGhostPad(name: "sink", target: try #require(queue.staticPad("sink")))
        #expect(ghost.target == queue.staticPad("sink"))
        try pipeline.add(branch)
        // Active first, then linked: a tee pushing into a still-flushing pad gets FLUSHING,
        // which stops the live source for good.
        #expect(branch.syncStateWithParent())
        try branchPad.link(ghost)
        let buffers = Shared(0)
        sink.staticPad("sink")?.addProbe(.buffer) { _ in buffers.update { $0 += 1 }; return .ok }
        #expect(waitUntil { buffers.value > 2 })

        pipeline.bus.post(application: try Structure("castline-mark, id=(int)7"))
        let messages = drainBus(pipeline, timeout: .seconds(5)) { message in
            if case .application = message { return true }
            return false
        }
        guard case .application(_, let structure)? = messages.last else { Issue.record("no application message"); return }
        #expect(structure.int("id") == 7)

        #expect(branchPad.unlink(ghost))
        tee.releaseRequestPad(branchPad)
        #expect(!tee.pads.contains(branchPad))
    }
}
