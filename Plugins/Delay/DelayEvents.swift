import CastlineKit

/// The delay stage's command, figures and events, in its own words.
enum DelayReport {
    /// How far behind the live edge playback is, in seconds (pipeline-wide stats, `stage` the delay's name).
    static let delayFigure = Figure("delay_s", label: "delay", meaning: .behindLive)
    /// How much delay the stage could give now (what it has buffered), in seconds.
    static let availableFigure = Figure("available_delay_s", label: "available delay", meaning: .behindLive)
    static let delay = delayFigure.name
    static let available = availableFigure.name

    /// More than any history a delay stage could hold (30 days, in seconds or steps).
    static let longest: Double = 30 * 86_400

    static let command = StageCommand(
        name: "delay", summary: "how far behind live the stream plays: set (12s) or moved by steps (+1, -1)",
        valueField: "seconds", range: 0...longest, keys: ["+": 1, "=": 1, "-": -1, "_": -1, "[": 10, "]": -10],
        figures: [delay, available], missingHint: "add - delay: { max: 10m } to its stages, or listen --delay", movesPlayback: true,
        parseValue: { text in
            // The API's own unit: a bare number is seconds (`ctl delay 12`), as `{"seconds": 12}` is.
            if let seconds = Double(text) { return seconds }
            return Duration(configText: text)?.seconds
        },
        status: { figures in
            guard let delay = figures[delay] else { return nil }
            return String(format: "delay %.1f s / %.1f s available", delay, figures[available] ?? 0)
        })

    /// `delay-changed`: a request applied (clamped to what history holds), or play-out started.
    static func changed(stage: String, requested: Duration, applied: Duration, available: Duration, answering: Bool) -> StageEvent {
        // Less than asked: clamped to what is held, or nearer live to the keyframe play-out resumes from.
        let clamped = applied < requested && requested > available
            ? String(format: " (asked %.1f s; %.1f s was available)", requested.seconds, available.seconds)
            : requested - applied >= .milliseconds(50)
            ? String(format: " (asked %.1f s; play-out goes on from the next keyframe)", requested.seconds)
            : applied - requested >= .milliseconds(50)
            ? String(format: " (asked %.1f s; play-out goes on after what already went out, from a keyframe)", requested.seconds) : ""
        return StageEvent(
            stage: stage, name: "delay-changed", command: answering ? command.name : nil,
            fields: ["requested_s": requested.seconds, "applied_s": applied.seconds, "available_s": available.seconds],
            figures: [delay: applied.seconds, self.available: available.seconds],
            line: String(format: "delay %.1f s / %.1f s available", applied.seconds, available.seconds) + clamped)
    }

    /// `available-delay-changed`: the history grew (at most once a second).
    static func availableChanged(stage: String, available: Duration) -> StageEvent {
        StageEvent(stage: stage, name: "available-delay-changed", fields: ["available_s": available.seconds],
                   figures: [self.available: available.seconds])
    }
}
