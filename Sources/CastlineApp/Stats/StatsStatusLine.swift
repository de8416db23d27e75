import CastlineKit
import Foundation

/// The compact status line stats samples drive: state, position, and per
/// stream bitrate plus level (audio) or frame rate (video), e.g.
/// `playing  12.3 s  audio 128 kbit/s -14 dBFS  video 2480 kbit/s 30 fps`.
/// With several stats stages, the first one to report speaks for the run.
struct StatsStatusLine {
    private var state: RunState?
    private var stage: String?
    private var streams: [StreamKind: [String: Double]] = [:]
    /// A delay stage's figures: how far behind, and how much history it holds.
    private var delay: (seconds: Double, available: Double)?
    /// An HLS source's wall clock minus the programme time of what leaves it (EXT-X-PROGRAM-DATE-TIME).
    private var latency: Double?

    mutating func update(_ event: RunEvent) -> Bool {
        switch event.kind {
        case .stateChanged(_, let to):
            state = to
            return stage != nil
        case .stats(let sample) where sample.stream == nil && sample.figures[StatsFigure.downloadBitrate] != nil:
            latency = sample.figures[StatsFigure.latency]
            return false
        case .stats(let sample) where sample.figures[StatsFigure.delaySeconds] != nil:
            delay = (sample.figures[StatsFigure.delaySeconds] ?? 0, sample.figures[StatsFigure.availableDelaySeconds] ?? 0)
            return stage != nil
        case .stats(let sample):
            // The publisher's figures are on its own status line.
            guard let stream = sample.stream, sample.stage != "rtmp" else { return false }
            if stage == nil { stage = sample.stage }
            guard sample.stage == stage else { return false }
            streams[stream] = sample.figures
            return true
        default:
            return false
        }
    }

    var text: String? {
        guard stage != nil else { return nil }
        var parts: [String] = []
        if let state { parts.append(state.rawValue) }
        if let position = streams.values.compactMap({ $0[StatsFigure.position] }).max() {
            parts.append(String(format: "%.1f s", position))
        }
        for (stream, figures) in streams.sorted(by: { $0.key < $1.key }) {
            var part = "\(stream)"
            if let bitrate = figures[StatsFigure.bitrate] { part += String(format: " %.0f kbit/s", bitrate) }
            if let level = figures[StatsFigure.rms] { part += String(format: " %.0f dBFS", level) }
            if let fps = figures["fps"] { part += String(format: " %.0f fps", fps) }
            parts.append(part)
        }
        if let delay { parts.append(String(format: "delay %.1f s / %.1f s available", delay.seconds, delay.available)) }
        // The source's figure is what plays only when no delay stage moves it.
        if let latency, delay == nil { parts.append(String(format: "latency %.1f s", latency)) }
        return parts.joined(separator: "  ")
    }
}
