import Foundation
import GstKit
import PipelineConfig
import Synchronization

/// The picture in a window on the X display: XVideo where the display has it, else plain X.
/// Not autovideosink: with no display it goes on down to dfbvideosink, whose DirectFB thread
/// crashed the process here (1.22). Sound is not taken: an `audio` sink beside it plays that.
public final class VideoSink: SinkComponent {
    public static let kind = "video"
    public static let summary = "show video in a window (sound is not taken: add an audio sink)"
    public static let sync = ConfigOption<Bool>("sync", default: true, help: "show each frame at its time (false: as fast as frames come)")
    public static let schema = OptionSchema(sync)

    let sync: Bool
    /// The sink that opened the display to check it, held open until the run ends: closing it
    /// would be the last client leaving a bare X server, which then resets and refuses the
    /// pipeline's own window a moment later ("Could not initialise X output").
    private let opener = Mutex<Element?>(nil)

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        sync = spec.options[Self.sync]
    }

    deinit { closeOpener() }

    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict {
        closeOpener()
        return .quiet
    }

    private func closeOpener() {
        _ = opener.withLock { held in defer { held = nil }; return held }?.setState(.null)
    }

    public var rendersAtTheClock: Bool { sync }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .video ? .raw : nil
    }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        guard let opened = try Self.window(), let factory = opened.factoryName else { throw BuildError(Self.noWindow, badInput: true) }
        opener.withLock { $0 = opened }
        let window = try ElementCatalog.make(factory)
        try window.set("sync", sync)
        return try BinChain.make(name, [try ElementCatalog.make("videoconvert"), try ElementCatalog.make("videoscale"), window],
                                 sinkPad: StreamKind.video.rawValue)
    }

    /// The first X sink that opens the display (READY opens it), left open, or nil. Making the
    /// bin checks this, before the run and on a reload alike. Neither sink installed is
    /// ElementCatalog's error, naming the package.
    ///
    /// An X server with no other client (a bare Xvfb) resets when the last one leaves, and
    /// refuses connections for a moment: the XVideo probe leaving, or a castline that just
    /// ended, was enough to refuse the plain X sink (11 runs of 20). The last sink tries again.
    static func window() throws -> Element? {
        guard ProcessInfo.processInfo.environment["DISPLAY"] != nil else { return nil }
        let factories = ["xvimagesink", "ximagesink"].filter { Gst.hasElement($0) }
        if factories.isEmpty { _ = try ElementCatalog.make("ximagesink") }
        for factory in factories {
            let sink = try ElementCatalog.make(factory)
            let attempts = factory == factories.last ? 8 : 1
            for attempt in 1...attempts {
                if sink.setState(.ready) != .failure { return sink }
                _ = sink.setState(.null)
                if attempt < attempts { Thread.sleep(forTimeInterval: 0.05 * Double(attempt)) }
            }
        }
        return nil
    }

    private static var noWindow: String {
        ProcessInfo.processInfo.environment["DISPLAY"].map {
            "cannot open a window on the display \"\($0)\" (is the X server running, and may castline use it?)"
        } ?? "no display to open a window on: DISPLAY is not set (run castline in a desktop session, or use --output audio or null)"
    }

    /// Why no window can be opened, or nil when one can (`doctor` asks too).
    public static func outputProblem() throws -> String? {
        guard let opened = try window() else { return noWindow }
        _ = opened.setState(.null)
        return nil
    }
}
