import Foundation
import TestSupport
import Testing
import GstKit

@Suite struct ProbeTests {
    @Test func dropResultDropsBuffers() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=10 ! identity name=id ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let identitySrc = try #require(pipeline.element(named: "id")?.staticPad("src"))
        let sinkPad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        let dropped = Shared(0), arrived = Shared(0)
        identitySrc.addProbe(.buffer) { _ in dropped.update { $0 += 1 }; return .drop }
        sinkPad.addProbe(.buffer) { _ in arrived.update { $0 += 1 }; return .ok }
        pipeline.setState(.playing)
        let messages = drainBus(pipeline)
        #expect(errorText(messages) == nil)
        #expect(messages.contains(where: isEOS))
        #expect(dropped.value == 10)
        #expect(arrived.value == 0)
    }

    @Test func blockingProbeBlocksUntilRemoved() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=10 ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let pad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        let blockedCalls = Shared(0), buffers = Shared(0)
        let id = try #require(pad.addProbe([.block, .buffer]) { _ in blockedCalls.update { $0 += 1 }; return .ok })
        pad.addProbe(.buffer) { _ in buffers.update { $0 += 1 }; return .ok }
        pipeline.setState(.playing)
        #expect(waitUntil { blockedCalls.value == 1 })
        Thread.sleep(forTimeInterval: 0.2)
        #expect(blockedCalls.value == 1)  // the streaming thread is held on the first buffer
        #expect(buffers.value == 0)
        #expect(pipeline.bus.pop(timeout: .milliseconds(10)).map(isEOS) != true)
        pad.removeProbe(id)
        #expect(drainBus(pipeline).contains(where: isEOS))
        #expect(buffers.value == 10)
    }

    @Test func idleProbeRuns() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc is-live=true ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let pad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        // An idle pad runs the probe at once, inside addProbe; returning .remove then yields no id.
        let ranNow = Shared(false)
        let immediate = pad.addProbe(.idle) { info in
            ranNow.update { $0 = true }
            #expect(info.type.contains(.idle))
            return .remove
        }
        #expect(ranNow.value)
        #expect(immediate == nil)

        pipeline.setState(.playing)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .playing)
        let ranLater = Shared(0)
        pad.addProbe(.idle) { _ in ranLater.update { $0 += 1 }; return .remove }
        #expect(waitUntil { ranLater.value == 1 })
    }

    @Test func probeClosureReleasedOnRemoveAndOnPadDeath() throws {
        let removedFlag = Shared(false), diedFlag = Shared(false), selfRemovedFlag = Shared(false)
        do {
            let sink = try Element.make("fakesink")
            let pad = try #require(sink.staticPad("sink"))
            let tracker = ReleaseTracker(removedFlag)
            let id = try #require(pad.addProbe(.buffer) { _ in _ = tracker; return .ok })
            #expect(!removedFlag.value)
            pad.removeProbe(id)
        }
        #expect(removedFlag.value)

        do {
            let sink = try Element.make("fakesink")
            let pad = try #require(sink.staticPad("sink"))
            let tracker = ReleaseTracker(diedFlag)
            pad.addProbe(.buffer) { _ in _ = tracker; return .ok }
        }
        #expect(diedFlag.value)  // pad and element finalized: GLib ran the destroy notify

        do {
            let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=3 ! fakesink name=sink")
            defer { pipeline.setState(.null) }
            let pad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
            addSelfRemovingProbe(pad, selfRemovedFlag)
            pipeline.setState(.playing)
            drainBus(pipeline)
            #expect(selfRemovedFlag.value)
        }
    }

    /// In its own function so nothing but the probe keeps the tracker alive.
    private func addSelfRemovingProbe(_ pad: Pad, _ flag: Shared<Bool>) {
        let tracker = ReleaseTracker(flag)
        pad.addProbe(.buffer) { _ in _ = tracker; return .remove }
    }

    @Test func rewrittenPTSIsSeenDownstream() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=5 ! identity name=id ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let upstream = try #require(pipeline.element(named: "id")?.staticPad("src"))
        let downstream = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        let original = Shared<[ClockTime]>([]), seen = Shared<[ClockTime]>([])
        upstream.addProbe(.buffer) { info in
            info.withWritableBuffer { buffer in
                guard let pts = buffer.pts else { return }
                original.update { $0.append(pts) }
                buffer.pts = pts + ClockTime(seconds: 1)
                buffer.isDiscont = true
            }
            return .ok
        }
        let wellFormed = Shared(true)  // checked here: #expect on a streaming thread has no test to report to
        downstream.addProbe(.buffer) { info in
            if let buffer = info.buffer, let pts = buffer.pts {
                let ok = buffer.isDiscont && buffer.size > 0 && buffer.withUnsafeBytes { $0.count } == buffer.size
                if !ok { wellFormed.update { $0 = false } }
                seen.update { $0.append(pts) }
            }
            return .ok
        }
        pipeline.setState(.playing)
        #expect(drainBus(pipeline).contains(where: isEOS))
        #expect(original.value.count == 5)
        #expect(seen.value == original.value.map { $0 + ClockTime(seconds: 1) })
        #expect(wellFormed.value)
    }

    @Test func eventProbeSeesCapsSegmentAndEOS() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=2 ! audio/x-raw,rate=22050 ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let pad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        let kinds = Shared<[EventKind]>([]), rate = Shared<Int?>(nil), segmentRate = Shared<Double?>(nil)
        pad.addProbe(.eventDownstream) { info in
            guard let event = info.event else { return .ok }
            kinds.update { $0.append(event.kind) }
            if let caps = event.caps { rate.update { $0 = caps.structure(at: 0)?.int("rate") } }
            if let segment = event.segment { segmentRate.update { $0 = segment.rate } }
            return .ok
        }
        pipeline.setState(.playing)
        #expect(drainBus(pipeline).contains(where: isEOS))
        let order = kinds.value
        #expect(order.first == .streamStart)
        #expect(order.contains(.caps) && order.contains(.segment))
        #expect(order.last == .eos)
        #expect(rate.value == 22050)
        #expect(segmentRate.value == 1.0)
    }

    @Test func forceKeyUnitMakesKeyframe() throws {
        try #require(Gst.hasElement("x264enc"))
        let pipeline = try Gst.parseLaunch(
            "videotestsrc num-buffers=40 ! video/x-raw,width=160,height=120,framerate=30/1 ! x264enc name=enc key-int-max=1000 tune=zerolatency speed-preset=ultrafast ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let encoder = try #require(pipeline.element(named: "enc"))
        let sinkPad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
        let keyframes = Shared<[Int]>([]), index = Shared(0)
        sinkPad.addProbe(.buffer) { info in
            let i = index.update { i in defer { i += 1 }; return i }
            if info.buffer?.isDelta == false { keyframes.update { $0.append(i) } }
            if i == 10 {
                // From the streaming thread, ask upstream for a keyframe.
                _ = sinkPad.peer?.sendEvent(Event.upstreamForceKeyUnit())
            }
            return .ok
        }
        _ = encoder
        pipeline.setState(.playing)
        #expect(drainBus(pipeline).contains(where: isEOS))
        let frames = keyframes.value
        #expect(frames.first == 0)
        #expect(frames.count >= 2)  // the first frame, and one after the request
    }
}
