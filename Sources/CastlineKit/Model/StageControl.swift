/// A command a stage takes while it runs: from the terminal's keys, from the control
/// API (`POST /NAME`) and from `castline ctl set NAME CHANGE`. A stage declares its
/// commands and the figures they move; the runner, the keys, the control API and the
/// status line read them from here, so a new stage with controls needs no core change.
public struct StageCommand: Sendable {
    /// The command's name: the route `POST /NAME`, e.g. `delay`.
    public let name: String
    /// One line for help.
    public let summary: String
    /// The JSON field that sets a value, e.g. `seconds` in `{"seconds": 12}`
    /// (`{"step": N}` moves it by N of the stage's steps).
    public let valueField: String
    /// The values a request may ask for (the stage clamps to what it can give).
    public let range: ClosedRange<Double>
    /// Keys that move it, and by how many steps: `["+": 1, "-": -1]`.
    public let keys: [Character: Int]
    /// The figures it moves, as the stage reports them (`delay_s`): `GET /status` carries their latest values.
    public let figures: [String]
    /// What to add when no stage takes the command, e.g. `add - delay: { max: 10m } to its stages`.
    public let missingHint: String
    /// A value as people write it (`12s`, `-6dB`), in `valueField`'s unit.
    public let parseValue: @Sendable (String) -> Double?
    /// The status line's words for the latest figures, e.g. `delay 12.0 s / 25.0 s available`.
    public let status: @Sendable ([String: Double]) -> String?
    /// It moves what plays (a delay): the position a reply gives is one sampled after the move.
    public let movesPlayback: Bool

    public init(
        name: String, summary: String, valueField: String, range: ClosedRange<Double>, keys: [Character: Int] = [:],
        figures: [String], missingHint: String, movesPlayback: Bool = false, parseValue: @escaping @Sendable (String) -> Double?,
        status: @escaping @Sendable ([String: Double]) -> String?
    ) {
        self.movesPlayback = movesPlayback
        self.name = name
        self.summary = summary
        self.valueField = valueField
        self.range = range
        self.keys = keys
        self.figures = figures
        self.missingHint = missingHint
        self.parseValue = parseValue
        self.status = status
    }

    /// `+2` and `-1` are steps; anything else is a value (`12s`, `-6dB`) in the command's own words.
    public func adjustment(from text: String) -> StageAdjustment? {
        StageAdjustment(text: text, range: range, parseValue: parseValue)
    }
}

/// A stage with commands that move it while it runs (a time-shift, a gain).
public protocol ControllableStage: Stage {
    static var commands: [StageCommand] { get }
    /// Applies a command; out of range is clamped and said so, never fatal. Returns what was
    /// applied: the `stage` event (its `command` the command's name) the stage also reports;
    /// nil when it is not in force yet (a time-shift still filling to its start).
    @discardableResult
    func perform(_ command: String, _ adjustment: StageAdjustment) -> StageEvent?
}

/// A stage's own event: a command applied (`delay-changed`), or something it holds or
/// hears changed (`silence` on a stream).
public struct StageEvent: Sendable {
    /// The stage's name in the pipeline (`delay1`).
    public var stage: String
    /// The stream it is about, when it is about one.
    public var stream: StreamKind?
    /// The `event` value in JSON, e.g. `delay-changed`.
    public var name: String
    /// The command it answers, when it answers one.
    public var command: String?
    /// The event's own JSON fields.
    public var fields: [String: Double]
    /// Its fields that are words, not numbers (an alarm's `kind`, a time as ISO 8601).
    public var labels: [String: String] = [:]
    /// The stage's figures now (see `StageCommand.figures`).
    public var figures: [String: Double]
    /// A line for people; nil when it is for JSON only.
    public var line: String?

    public init(stage: String, stream: StreamKind? = nil, name: String, command: String? = nil, fields: [String: Double],
                labels: [String: String] = [:], figures: [String: Double] = [:], line: String? = nil) {
        self.labels = labels
        self.stage = stage
        self.stream = stream
        self.name = name
        self.command = command
        self.fields = fields
        self.figures = figures
        self.line = line
    }
}

extension StageEvent {
    /// What an encode stage aims a stream at (`video_kbps` or `audio_kbps`), said once it is
    /// built, so a status line can show the target beside what is measured.
    public static let targetBitrateName = "target-bitrate"

    public static func targetBitrate(stage: String, stream: StreamKind, kbps: Double) -> StageEvent {
        StageEvent(stage: stage, name: targetBitrateName, fields: ["\(stream)_kbps": kbps])
    }
}

extension Sequence<StageCommand> {
    /// The figures among `figures` that these commands move (`delay_s`, `gain_db`).
    public func moved(in figures: [String: Double]) -> [String: Double] {
        let names = Set(flatMap(\.figures))
        return figures.filter { names.contains($0.key) }
    }
}
