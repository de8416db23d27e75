import Foundation
import GstKit
import PipelineConfig
import Synchronization

/// What the machine hears and sees: a microphone (PulseAudio or ALSA) and a camera (V4L2),
/// live. Each device is opened once before the run, so one that is missing, busy or refuses
/// is one clear line, not a pipeline that fails to start. `api: test` puts a test pattern in
/// place of the camera, through the same scaling and rate conversion (a setup checked
/// without one).
public final class CaptureSource: SourceComponent {
    public static let kind = "capture"
    public static let summary = "live capture: a microphone (PulseAudio or ALSA) and/or a camera (V4L2)"
    public static let audioOptions = ConfigOption<OptionValues?>("audio", .object(Audio.schema),
                                                    help: "capture sound (with neither audio nor video given: the default microphone)")
    public static let videoOptions = ConfigOption<OptionValues?>("video", .object(Video.schema), help: "capture video")
    public static let schema = OptionSchema(audioOptions, videoOptions)

    public struct Audio: Sendable {
        public static let api = ConfigOption<String>("api", .choice(["auto", "pulse", "alsa"]), default: "auto",
                                        help: "auto: PulseAudio when its server runs, else ALSA")
        public static let device = ConfigOption<String?>("device",
            help: "a PulseAudio source name (pactl list short sources) or an ALSA device (arecord -L); omit for the default")
        static let schema = OptionSchema(api, device)

        var api: String, device: String?

        init(_ values: OptionValues) {
            (api, device) = (values[Self.api], values[Self.device])
        }
    }

    public struct Video: Sendable {
        public static let api = ConfigOption<String>("api", .choice(["v4l2", "test"]), default: "v4l2",
                                        help: "v4l2: a camera or capture card; test: a test pattern through the same path")
        public static let device = ConfigOption<String>("device", default: "/dev/video0", help: "the V4L2 device")
        public static let width = ConfigOption<Int>("width", .int(16...7680), default: 1280, help: "frame width the picture is scaled to")
        public static let height = ConfigOption<Int>("height", .int(16...4320), default: 720, help: "frame height the picture is scaled to")
        public static let fps = ConfigOption<Double>("fps", .double(1...240), default: 30, help: "frames per second, dropped or repeated to hold it")
        static let schema = OptionSchema(api, device, width, height, fps)

        var api: String, device: String, width: Int, height: Int, fps: Double

        init(_ values: OptionValues) {
            (api, device) = (values[Self.api], values[Self.device])
            (width, height, fps) = (values[Self.width], values[Self.height], values[Self.fps])
        }
    }
    let audio: Audio?
    let video: Video?
    let keyPath: String
    /// `auto` settled by `prepare`: the API whose device opened.
    private var audioAPI: String?
    /// Devices a running capture source in this process holds, with the API each opened
    /// through: a reload that replaces the source takes them as they are, unchecked, for the
    /// running one holds them (ALSA and V4L2 devices are one program's at a time).
    private static let devicesInUse = Mutex<[String: String]>([:])

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        audio = (options[Self.audioOptions] ?? (options[Self.videoOptions] == nil ? OptionValues() : nil)).map(Audio.init)
        video = options[Self.videoOptions].map(Video.init)
        keyPath = spec.keyPath
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        var streams: [StreamKind: StreamForm] = [:]
        if video != nil { streams[.video] = .raw }
        if audio != nil { streams[.audio] = .raw }
        return streams
    }

    /// Opens each wanted device and takes one buffer from it: the errors a user can fix are found here.
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {
        let inUse = Self.devicesInUse.withLock { $0 }
        if let audio, wanted.contains(.audio) {
            if let held = inUse[Self.name(audio)] { audioAPI = held } else { audioAPI = try await Self.openAudio(audio, at: "\(keyPath).audio") }
        }
        if let video, wanted.contains(.video) {
            if video.api == "v4l2", !FileManager.default.fileExists(atPath: video.device) {
                throw BuildError("no video device \"\(video.device)\" (is the camera plugged in? list them with: v4l2-ctl --list-devices)",
                                 at: "\(keyPath).video.device", badInput: true)
            }
            if inUse[video.device] == nil, let problem = await DeviceCheck.firstBuffer(from: try Self.videoElement(video)) {
                throw BuildError(Self.videoProblem(problem, video), at: "\(keyPath).video", badInput: true)
            }
        }
    }

    /// Its devices are let go with the run (or the reload that replaced it).
    public func willStop() {
        Self.devicesInUse.withLock { held in
            if let video { held[video.device] = nil }
            if let audio { held[Self.name(audio)] = nil }
        }
    }

    /// How `devicesInUse` names a microphone.
    private static func name(_ audio: Audio) -> String { "\(audio.api):\(audio.device ?? "default")" }

    private static func openAudio(_ audio: Audio, at: String) async throws -> String {
        if audio.api != "alsa" {
            guard let problem = await DeviceCheck.firstBuffer(from: try Self.audioElement(api: "pulse", device: audio.device))
            else { return "pulse" }
            if audio.api == "pulse" || !problem.text.contains("Failed to connect:") {
                throw BuildError(Self.pulseProblem(problem, audio.device), at: at, badInput: true)
            }
        }
        // No PulseAudio server: ALSA, for auto too.
        if let problem = await DeviceCheck.firstBuffer(from: try Self.audioElement(api: "alsa", device: audio.device)) {
            let message = switch (audio.api, audio.device) {
            case ("auto", nil): "no sound input: neither PulseAudio nor ALSA can capture here (start PulseAudio or plug in a microphone)"
            case ("auto", let device?): "no PulseAudio server, and ALSA cannot open \"\(device)\" either (start PulseAudio, or list ALSA devices with: arecord -L)"
            default: Self.alsaProblem(problem, audio.device ?? "default")
            }
            throw BuildError(message, at: at, badInput: true)
        }
        return "alsa"
    }

    /// PulseAudio's errors are told apart by its own words (pa_strerror): GStreamer gives them all one code.
    static func pulseProblem(_ problem: DeviceProblem, _ device: String?) -> String {
        let problem = problem.text
        if problem.contains("Failed to connect:") { return "no PulseAudio server to capture from (start it, or use api: alsa)" }
        if problem.contains("No such entity") {
            return "PulseAudio has no source \"\(device ?? "default")\" (list them with: pactl list short sources)"
        }
        return "cannot capture from PulseAudio\(device.map { " source \"\($0)\"" } ?? ""): \(problem)"
    }

    static func alsaProblem(_ problem: DeviceProblem, _ device: String) -> String {
        if problem.busy {
            return "the ALSA device \"\(device)\" is busy: another program is recording from it (close it, or pick another device)"
        }
        return "cannot open the ALSA capture device \"\(device)\" (list them with: arecord -L)"
    }

    static func videoProblem(_ problem: DeviceProblem, _ video: Video) -> String {
        if problem.busy {
            return "\"\(video.device)\" is busy: another program is using the camera (close it, or pick another device)"
        }
        return "cannot capture from \"\(video.device)\": \(problem.text)"
    }

    static func audioElement(api: String, device: String?) throws -> Element {
        let source = try ElementCatalog.make(api == "alsa" ? "alsasrc" : "pulsesrc")
        if let device { try source.set("device", text: device) }
        return source
    }

    static func videoElement(_ video: Video) throws -> Element {
        guard video.api == "v4l2" else {
            let pattern = try ElementCatalog.make("videotestsrc")
            try pattern.set("is-live", true)
            try pattern.set("pattern", text: "ball")
            return pattern
        }
        let camera = try ElementCatalog.make("v4l2src")
        try camera.set("device", text: video.device)
        return camera
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        Self.devicesInUse.withLock { held in
            if let video, streams[.video] != nil, video.api == "v4l2" { held[video.device] = "v4l2" }
            if let audio, streams[.audio] != nil, let audioAPI { held[Self.name(audio)] = audioAPI }
        }
        if let video, streams[.video] != nil {
            // Whatever raw form and rate the device gives, the encoder gets I420 at the size and rate asked.
            let (num, den) = TestSource.fraction(video.fps)
            try add([try Self.videoElement(video), try ElementCatalog.make("videoconvert"), try ElementCatalog.make("videoscale"),
                     try ElementCatalog.make("videorate"),
                     try BinChain.capsFilter("video/x-raw,format=I420,width=\(video.width),height=\(video.height),framerate=\(num)/\(den)")],
                    as: .video, to: bin)
        }
        if let audio, streams[.audio] != nil {
            try add([try Self.audioElement(api: audioAPI ?? (audio.api == "alsa" ? "alsa" : "pulse"), device: audio.device),
                     try ElementCatalog.make("audioconvert"), try ElementCatalog.make("audioresample"),
                     try BinChain.capsFilter("audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2")],
                    as: .audio, to: bin)
        }
        return bin
    }

    private func add(_ chain: [Element], as stream: StreamKind, to bin: Bin) throws {
        for element in chain { try bin.add(element) }
        for (upstream, downstream) in zip(chain, chain.dropFirst()) { try upstream.link(downstream) }
        try bin.ghost(chain.last?.staticPad("src"), as: stream.rawValue)
    }
}

/// What opening a device said: GStreamer's words, and whether another program holds it.
struct DeviceProblem: Sendable {
    let text: String
    var busy = false
}

/// Opens a device the way the run will and waits for its first buffer.
enum DeviceCheck {
    /// nil when `source` gave a buffer within `timeout`; else what went wrong. Opening a device
    /// (a state change) may take a while: it is done on a thread of its own, off the caller's
    /// executor (the runner's, reloading) and off the cooperative pool.
    static func firstBuffer(from source: Element, timeout: Duration = .seconds(5)) async -> DeviceProblem? {
        let pipeline = Pipeline(name: "device-check")
        do {
            try source.set("num-buffers", Int32(1))
            let sink = try ElementCatalog.make("fakesink")
            try pipeline.add(source, sink)
            try source.link(sink)
        } catch {
            return DeviceProblem(text: "\(error)")
        }
        let messages = pipeline.bus.messages()
        // A state change that fails has posted its error: it is read from the messages like any other.
        _ = await onOwnThread { pipeline.setState(.playing) }
        let problem = await withTaskGroup(of: DeviceProblem?.self) { group in
            group.addTask {
                for await message in messages {
                    switch message {
                    case .error(_, let text, let debug, let cause):
                        let said = debug.flatMap(PipelineRunner.hint(fromDebug:)).map { "\(text): \($0)" } ?? text
                        return DeviceProblem(text: said, busy: cause == .busy)
                    case .endOfStream: return nil
                    default: continue
                    }
                }
                return DeviceProblem(text: "no answer")
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return DeviceProblem(text: "nothing came from the device within \(timeout)")
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            pipeline.bus.finish()
            return first
        }
        _ = await onOwnThread { pipeline.setState(.null) }
        return problem
    }
}
