@testable import CastlineKit
import Testing

/// A busy device cannot be made on this machine (no sound card, no camera, and no snd-aloop or
/// v4l2loopback in its kernel): the lines are checked from what the device check passes on, whose
/// `busy` GstKit reads from GStreamer's error code (`CoreTests`), not from its words.
@Suite("A capture device another program holds: one line that says so")
struct CaptureProblemTests {
    @Test("busy by its code, whatever the words; any other failure keeps GStreamer's words")
    func busyDevices() {
        let words = "Could not open audio device for recording. Device is being used by another application."
        #expect(CaptureSource.alsaProblem(DeviceProblem(text: words, busy: true), "hw:1")
            == "the ALSA device \"hw:1\" is busy: another program is recording from it (close it, or pick another device)")
        #expect(CaptureSource.alsaProblem(DeviceProblem(text: words), "hw:1")
            == "cannot open the ALSA capture device \"hw:1\" (list them with: arecord -L)")
        let camera = CaptureSource.Video(OptionValues())
        #expect(CaptureSource.videoProblem(DeviceProblem(text: "Device '/dev/video0' is busy", busy: true), camera)
            == "\"/dev/video0\" is busy: another program is using the camera (close it, or pick another device)")
        #expect(CaptureSource.videoProblem(DeviceProblem(text: "Could not read from resource."), camera)
            == "cannot capture from \"/dev/video0\": Could not read from resource.")
    }
}
