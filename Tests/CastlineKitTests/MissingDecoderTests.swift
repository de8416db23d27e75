@testable import CastlineKit
import TestSupport
import Testing

@Suite("A codec GStreamer cannot decode: named, with its Debian package", .noGStreamerCriticals)
struct MissingDecoderTests {
    @Test("stream caps map to the Debian package with their decoder")
    func packages() {
        #expect(ElementCatalog.decoderPackage(forCaps: "video/x-h265, stream-format=(string)hvc1") == "gstreamer1.0-libav")
        #expect(ElementCatalog.decoderPackage(forCaps: "audio/x-ac3") == "gstreamer1.0-libav")
        #expect(ElementCatalog.decoderPackage(forCaps: "video/x-vp9") == "gstreamer1.0-plugins-good")
        #expect(ElementCatalog.decoderPackage(forCaps: "audio/x-opus") == "gstreamer1.0-plugins-base")
        #expect(ElementCatalog.decoderPackage(forCaps: "audio/x-unknown, codec-id=(string)A_MS/ACM") == nil)
    }

    @Test("the line names the codec and the package, or says no package has it")
    func messages() {
        let h265 = ElementCatalog.missingDecoderMessage(description: "H.265 decoder", caps: "video/x-h265, profile=main")
        #expect(h265.contains("H.265 decoder for video/x-h265"), "\(h265)")
        #expect(h265.contains("gstreamer1.0-libav"), "\(h265)")
        let unknown = ElementCatalog.missingDecoderMessage(description: "audio/x-unknown decoder", caps: "audio/x-unknown")
        #expect(unknown == "no GStreamer audio/x-unknown decoder, and no Debian package castline knows has one (this codec cannot be played here)")
    }

    @Test("a missing-plugin message becomes the line naming the codec and its package")
    func fromMessage() throws {
        let message = try Structure(#"missing-plugin, type=(string)decoder, detail=(GstCaps)"video/x-h265\,\ stream-format\=\(string\)hvc1", name=(string)"H.265 decoder""#)
        let line = PipelineRunner.missingDecoder(in: message)
        #expect(line?.contains("H.265 decoder for video/x-h265") == true, "\(line ?? "nil")")
        #expect(line?.contains("gstreamer1.0-libav") == true, "\(line ?? "nil")")
        #expect(PipelineRunner.missingDecoder(in: try Structure("missing-plugin, type=(string)encoder")) == nil)
    }
}
