import Testing
import GstKit

@Suite struct PropertyTests {
    @Test func setFromText() throws {
        let volume = try Element.make("volume")
        try volume.set("volume", text: "0.5")
        #expect(volume.double("volume") == 0.5)
        try volume.set("mute", text: "true")
        #expect(volume.bool("mute") == true)

        let source = try Element.make("audiotestsrc")
        try source.set("wave", text: "square")  // enum by nick
        #expect(source.int("wave") == 1)
        #expect(source.string("wave") == "square")
        try source.set("wave", text: "sine")
        #expect(source.int("wave") == 0)

        let filter = try Element.make("capsfilter")
        try filter.set("caps", text: "audio/x-raw,rate=48000,channels=2")
        let caps = try #require(filter.caps("caps"))
        #expect(caps.structure(at: 0)?.int("rate") == 48000)
        #expect(filter.string("caps")?.contains("48000") == true)
    }

    @Test func invalidTextIsAnError() throws {
        let volume = try Element.make("volume", name: "vol")
        #expect(throws: GstError.unknownProperty(element: "vol", property: "loudness")) {
            try volume.set("loudness", text: "1")
        }
        #expect(throws: GstError.invalidPropertyValue(element: "vol", property: "volume", value: "loud")) {
            try volume.set("volume", text: "loud")
        }
        // Out of the property's range (0...10): GStreamer would clamp silently.
        #expect(throws: GstError.invalidPropertyValue(element: "vol", property: "volume", value: "50")) {
            try volume.set("volume", text: "50")
        }
        #expect(volume.double("volume") == 1.0)
        let source = try Element.make("audiotestsrc", name: "src")
        #expect(throws: GstError.invalidPropertyValue(element: "src", property: "wave", value: "no-such-wave")) {
            try source.set("wave", text: "no-such-wave")
        }
    }

    @Test func typedRoundTrip() throws {
        let source = try Element.make("audiotestsrc")
        try source.set("num-buffers", 42)
        #expect(source.int("num-buffers") == 42)
        try source.set("freq", 880.0)
        #expect(source.double("freq") == 880)
        try source.set("is-live", true)
        #expect(source.bool("is-live") == true)
        try source.set("timestamp-offset", Int64(1_000))
        #expect(source.int("timestamp-offset") == 1_000)
        try source.set("wave", 2)  // enum by value
        #expect(source.int("wave") == 2)
        try source.set("name", "renamed")
        #expect(source.name == "renamed")
        #expect(throws: GstError.self) { try source.set("wave", 12345) }
        #expect(throws: GstError.self) { try source.set("num-buffers", "not a number") }
        #expect(throws: GstError.self) { try source.set("is-live", 3.5) }

        let queue = try Element.make("queue")
        try queue.set("max-size-time", UInt64(2_000_000_000))
        #expect(queue.int("max-size-time") == 2_000_000_000)
        try queue.set("max-size-buffers", UInt32(7))
        #expect(queue.int("max-size-buffers") == 7)
        #expect(throws: GstError.self) { try queue.set("max-size-buffers", -1) }

        let filter = try Element.make("capsfilter")
        try filter.set("caps", try Caps("video/x-raw,width=320"))
        #expect(filter.caps("caps")?.structure(at: 0)?.int("width") == 320)

        #expect(source.hasProperty("freq"))
        #expect(!source.hasProperty("nope"))
        #expect(source.string("nope") == nil)
        #expect(source.int("nope") == nil)
    }

    @Test func structureProperty() throws {
        // rtpbin's sessions are private; identity's "stats" is a GstStructure-typed property.
        let identity = try Element.make("identity")
        let stats = try #require(identity.structure("stats"))
        #expect(stats.has("num-buffers"))
    }
}
