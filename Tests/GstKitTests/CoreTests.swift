import CGStreamer
import Foundation
import TestSupport
import Testing
@testable import GstKit

@Suite struct CoreTests {
    init() { Gst.initialize() }

    @Test func versionAndRegistry() {
        #expect(Gst.versionString.hasPrefix("GStreamer 1."))
        #expect(Gst.hasElement("fakesink"))
        #expect(!Gst.hasElement("castline-no-such-element"))
        #expect(Gst.pluginName(ofElement: "audiotestsrc") == "audiotestsrc")
        #expect(Gst.pluginName(ofElement: "castline-no-such-element") == nil)
    }

    @Test func clockTime() {
        #expect(ClockTime(seconds: 1.5).nanoseconds == 1_500_000_000)
        #expect(ClockTime(.milliseconds(250)).nanoseconds == 250_000_000)
        #expect(ClockTime(nanoseconds: 2_000_000_000).duration == .seconds(2))
        #expect(ClockTime(raw: UInt.max) == nil)
        #expect(ClockTime(nanoseconds: 3_723_000_000_001).description == "1:02:03.000000001")
    }

    @Test func bufferProbeCountsBuffersAndBusStreamSeesEOS() async throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc name=src num-buffers=20 ! fakesink name=sink")
        defer { pipeline.setState(.null) }
        let sink = try #require(pipeline.element(named: "sink"))
        let pad = try #require(sink.staticPad("sink"))
        let timestamps = Shared<[ClockTime?]>([])
        let id = pad.addProbe(.buffer) { info in
            timestamps.update { $0.append(info.buffer?.pts) }
            return .ok
        }
        #expect(id != nil)

        let bus = pipeline.bus
        let stream = bus.messages()
        let watchdog = Task { try await Task.sleep(for: .seconds(10)); bus.finish() }
        defer { watchdog.cancel() }
        #expect(pipeline.setState(.playing) != .failure)

        var sawEOS = false, sawPlaying = false, errors: [String] = []
        for await message in stream {
            switch message {
            case .endOfStream: sawEOS = true
            case .stateChanged(let source, _, .playing, _) where source == pipeline.name: sawPlaying = true
            case .error(_, let text, _, _): errors.append(text)
            default: break
            }
            if sawEOS || !errors.isEmpty { break }
        }
        #expect(errors.isEmpty)
        #expect(sawEOS)
        #expect(sawPlaying)
        let seen = timestamps.value
        #expect(seen.count == 20)
        let pts = seen.compactMap { $0 }
        #expect(pts.count == 20)
        #expect(zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func busStreamEndsWhenPipelineGoesToNull() async throws {
        let pipeline = try Gst.parseLaunch("fakesrc num-buffers=1 ! fakesink")
        let stream = pipeline.bus.messages()
        pipeline.setState(.playing)
        _ = pipeline.currentState(timeout: .seconds(5))
        pipeline.setState(.null)
        var count = 0
        for await _ in stream { count += 1 }  // would hang if the stream did not end
        #expect(count > 0)
    }

    @Test("a delivered bus message is released, and with it the element that posted it")
    func deliveredMessagesAreReleased() async throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc num-buffers=5 ! fakesink name=sink")
        let sink = try #require(pipeline.element(named: "sink"))
        let baseline = sink.referenceCount  // the pipeline's and ours
        let stream = pipeline.bus.messages()
        pipeline.setState(.playing)
        var seen = 0
        for await message in stream {
            seen += 1
            if case .endOfStream = message { break }
        }
        pipeline.setState(.null)
        // The sink posted state changes and the EOS; each message held a ref on it. A sync handler
        // that drops a message owns it: unreleased, they leaked their sources (a whole RTMP
        // publishing pipeline at every reconnect).
        #expect(seen > 5)
        #expect(sink.referenceCount == baseline)
    }

    @Test func errorMessageFromMissingFile() throws {
        let pipeline = try Gst.parseLaunch("filesrc location=/nonexistent/castline.wav ! fakesink")
        defer { pipeline.setState(.null) }
        #expect(pipeline.setState(.playing) == .failure)
        let messages = drainBus(pipeline, timeout: .seconds(5))
        let text = try #require(errorText(messages))
        #expect(text.contains("nonexistent") || text.lowercased().contains("not found") || text.lowercased().contains("no such"))
        let sources = messages.compactMap { if case .error(let s, _, _, _) = $0 { s } else { nil } }
        #expect(sources.first?.hasPrefix("filesrc") == true)
    }

    @Test("an error's cause comes from its GStreamer code, not its words: a busy device, a full disk")
    func errorCauseFromCode() async throws {
        let pipeline = Pipeline(name: "causes")
        let bus = pipeline.bus
        let stream = bus.messages()
        // alsasrc's words for a busy device say "being used", not "busy": only the code tells.
        let words = "Could not open audio device for recording. Device is being used by another application."
        let codes = [GST_RESOURCE_ERROR_BUSY, GST_RESOURCE_ERROR_NO_SPACE_LEFT, GST_RESOURCE_ERROR_OPEN_READ]
        for code in codes {
            let error = g_error_new_literal(gst_resource_error_quark(), gint(code.rawValue), words)
            _ = gst_bus_post(bus.pointer, gst_message_new_error(nil, error, nil))
            g_error_free(error)
        }
        var causes: [ErrorCause] = []
        for await message in stream {
            if case .error(_, let text, _, let cause) = message {
                #expect(text == words)
                causes.append(cause)
            }
            if causes.count == codes.count { break }
        }
        #expect(causes == [.busy, .diskFull, .other])
    }

    @Test func eosEventGivesEndOfStream() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc is-live=true ! fakesink")
        defer { pipeline.setState(.null) }
        pipeline.setState(.playing)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .playing)
        let event = Event.endOfStream()
        #expect(pipeline.sendEvent(event))
        #expect(event.isSent)
        #expect(!pipeline.sendEvent(event))  // an event is sent once
        #expect(drainBus(pipeline).contains(where: isEOS))
    }

    @Test func positionClockAndLatency() throws {
        // fakesink only reports a live latency when it syncs to the clock.
        let pipeline = try Gst.parseLaunch("audiotestsrc is-live=true ! fakesink sync=true")
        defer { pipeline.setState(.null) }
        pipeline.setState(.playing)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .playing)
        #expect(waitUntil { pipeline.queryPosition() != nil })
        #expect(pipeline.clock?.time != nil)
        #expect(pipeline.baseTime != nil)
        let running = try #require(pipeline.runningTime)
        #expect(running > .zero)
        let latency = try #require(pipeline.queryLatency())
        #expect(latency.live)
    }

    /// CI once read a beep 345 s late: a file's first beeps were timed in the moment a pipeline
    /// going to PLAYING has given its children the clock but not yet their base time.
    @Test("running time exists only while playing: not with a clock and no base time yet, not paused")
    func runningTimeOnlyWhilePlaying() throws {
        let pipeline = try Gst.parseLaunch("audiotestsrc ! fakesink name=sink sync=true")
        defer { pipeline.setState(.null) }
        let sink = try #require(pipeline.element(named: "sink"))
        pipeline.setState(.paused)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .paused)
        // That moment, held: a clock, and the base time still 0.
        let clock = gst_system_clock_obtain()
        defer { gst_object_unref(clock) }
        #expect(gst_element_set_clock(sink.pointer, clock) != 0)
        #expect(sink.clock != nil && sink.baseTime == .zero)
        #expect(sink.runningTime == nil)
        pipeline.setState(.playing)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .playing)
        let running = try #require(sink.runningTime)
        #expect(running < ClockTime(nanoseconds: 5_000_000_000), "\(running)")
        pipeline.setState(.paused)
        #expect(pipeline.currentState(timeout: .seconds(5)).current == .paused)
        #expect(sink.runningTime == nil)
    }

    @Test func parseErrors() {
        #expect(throws: GstError.self) { try Gst.parseLaunch("audiotestsrc ! ! fakesink") }
        do {
            _ = try Gst.parseLaunch("castlinenosuchelement ! fakesink")
            Issue.record("expected an error")
        } catch {
            guard case .parse(let message) = error else { Issue.record("wrong error \(error)"); return }
            #expect(message.contains("castlinenosuchelement"))
        }
    }

    @Test func parseBinGhostsUnlinkedPads() throws {
        let bin = try Gst.parseBin("audioconvert ! volume volume=0.5")
        let names = Set(bin.pads.map(\.name))
        #expect(names == ["sink", "src"])
        let src = try #require(bin.staticPad("src"))
        #expect(src is GhostPad)
        #expect(src.direction == .src)
        #expect(bin.children.count == 2)

        let pipeline = Pipeline(name: "ghosted")
        defer { pipeline.setState(.null) }
        let source = try Element.make("audiotestsrc")
        try source.set("num-buffers", 5)
        let sink = try Element.make("fakesink")
        try pipeline.add(source, bin, sink)
        try source.link(bin)
        try bin.link(sink)
        #expect(bin.parent == pipeline)
        pipeline.setState(.playing)
        let messages = drainBus(pipeline)
        #expect(errorText(messages) == nil)
        #expect(messages.contains(where: isEOS))
        #expect(!pipeline.dotGraph().isEmpty)
    }

    @Test func elementMakeAndBins() throws {
        #expect(throws: GstError.missingElement(factory: "nonexistent")) { try Element.make("nonexistent") }
        let made = try Element.make("fakesink", name: "mysink")
        #expect(made.name == "mysink")
        #expect(made.factoryName == "fakesink")
        #expect(try Element.make("pipeline") is Pipeline)
        #expect(try Element.make("bin") is Bin)

        let bin = Bin(name: "outer")
        try bin.add(made)
        #expect(throws: GstError.self) { try Bin().add(made) }  // already has a parent
        #expect(bin.element(named: "mysink") == made)
        #expect(bin.children == [made])
        try bin.remove(made)
        #expect(bin.children.isEmpty)
        #expect(made.parent == nil)
        #expect(made.name == "mysink")  // still alive through our own reference
    }

    @Test func linkErrorsNameCaps() throws {
        let pipeline = Pipeline()
        let video = try Element.make("videotestsrc")
        let audio = try Element.make("audioconvert")
        try pipeline.add(video, audio)
        do {
            try video.link(audio)
            Issue.record("video should not link to audio")
        } catch {
            guard case .link(let from, let to, let reason) = error else { Issue.record("\(error)"); return }
            #expect(from == video.name && to == audio.name)
            #expect(reason.contains("video/x-raw"))
        }
        let src = try #require(video.staticPad("src")), sink = try #require(audio.staticPad("sink"))
        do {
            try src.link(sink)
            Issue.record("pads should not link")
        } catch {
            #expect("\(error)".contains("noformat") || "\(error)".contains("no common format"))
        }
        #expect(!src.isLinked)
    }

    @Test func capsAndStructures() throws {
        let caps = try Caps("audio/x-raw, format=S16LE, rate=(int)48000, channels=(int)2")
        #expect(caps.isFixed)
        #expect(!caps.isAny && !caps.isEmpty)
        #expect(caps.count == 1)
        #expect(caps.mediaType == "audio/x-raw")
        #expect(caps.intersects(try Caps("audio/x-raw")))
        #expect(!caps.intersects(try Caps("video/x-raw")))
        #expect(caps.isSubset(of: try Caps("audio/x-raw")))
        #expect(caps == (try Caps(caps.description)))
        #expect(throws: GstError.self) { try Caps("audio/x-raw, rate=(int)notanumber") }

        let s = try #require(caps.structure(at: 0))
        #expect(s.name == "audio/x-raw")
        #expect(s.int("rate") == 48000)
        #expect(s.string("format") == "S16LE")
        #expect(caps.structure(at: 1) == nil)

        let t = try Structure("test, flag=(boolean)true, t=(guint64)1500000000, f=(fraction)30/1, d=(double)0.25, n=(structure)\"inner\\,\\ x\\=\\(int\\)1\\;\", l={ 1.0, 2.5 }")
        #expect(t.bool("flag") == true)
        #expect(t.clockTime("t") == ClockTime(seconds: 1.5))
        #expect(t.uint64("t") == 1_500_000_000)
        #expect(t.fraction("f")! == (30, 1))
        #expect(t.double("d") == 0.25)
        #expect(t.doubles("l") == [1.0, 2.5])
        #expect(t.structure("n")?.int("x") == 1)
        #expect(t.has("d") && !t.has("zzz"))
        #expect(t.int("missing") == nil)
        #expect(t.fieldNames == ["flag", "t", "f", "d", "n", "l"])
        #expect(t.description.hasPrefix("test"))
    }
}

@Suite struct ReferenceCountTests {
    @Test func wrappersHoldExactlyOneReference() throws {
        let element = try Element.make("identity")
        #expect(element.referenceCount == 1)  // the floating ref was sunk, not added to
        let pipeline = try Gst.parseLaunch("fakesrc ! fakesink name=sink")
        #expect(pipeline.referenceCount == 1)
        let bin = Bin()
        #expect(bin.referenceCount == 1)
        #expect(Pipeline().referenceCount == 1)

        try bin.add(element)
        #expect(element.referenceCount == 2)  // ours + the bin's
        do {
            let found = try #require(bin.element(named: element.name))
            #expect(found.referenceCount == 3)
            _ = bin.children
            _ = found.parent
        }
        #expect(element.referenceCount == 2)

        let pad = try #require(element.staticPad("sink"))
        #expect(pad.referenceCount == 2)  // the element's + ours
        _ = element.pads
        #expect(pad.referenceCount == 2)
        let ghost = try bin.addGhostPad(name: "in", target: pad)
        #expect(ghost.referenceCount == 2)  // the bin's + ours

        try bin.remove(element)
        #expect(element.referenceCount == 1)

        let sink = try #require(pipeline.element(named: "sink"))
        #expect(sink.referenceCount == 2)
        #expect(throws: GstError.stateChange(element: "nope", to: .playing)) {
            let broken = try Gst.parseLaunch("filesrc location=/nonexistent ! fakesink")
            try broken.set("name", "nope")
            defer { broken.setState(.null) }
            try broken.changeState(to: .playing)
        }
    }
}
