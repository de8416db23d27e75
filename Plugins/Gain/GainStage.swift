import CastlineKit
import Foundation
import Synchronization

/// Turns the sound up or down, and lets it be moved while it runs: the keys 9
/// and 0 (as in mpv), `POST /gain` and `castline ctl set gain -6dB`. All it
/// needs from castline is the stage interface: this folder and its line in
/// the stage registry.
public final class GainStage: ControllableStage {
    public static let kind = "gain"
    public static let summary = "turn the sound up or down, movable while running (keys 9 and 0, POST /gain)"
    public static let db = ConfigOption<Double>("db", .double(range), default: 0, help: "the gain at start, in dB (e.g. -6)")
    public static let step = ConfigOption<Double>("step", .double(0.1...20), default: 1, help: "what the 9 and 0 keys take away and add, in dB")
    public static let schema = OptionSchema(db, step)

    static let range: ClosedRange<Double> = -60...20
    static let figure = "gain_db"

    public static let commands = [StageCommand(
        name: "gain", summary: "the sound's gain in dB: set (-6dB) or moved by steps (+1, -1)",
        valueField: "db", range: range, keys: ["0": 1, "9": -1],
        figures: [figure], missingHint: "add - gain: { db: 0 } to its stages",
        parseValue: { text in
            let number = text.lowercased().hasSuffix("db") ? String(text.dropLast(2)) : text
            return Double(number.trimmingCharacters(in: .whitespaces))
        },
        status: { figures in figures[figure].map { String(format: "gain %+.1f dB", $0) } })]

    private let name: String
    private let step: Double
    private let events: EventEmitter
    /// The gain in dB, and the `volume` elements it drives (one per audio stream).
    private let state: Mutex<(db: Double, volumes: [Element])>

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        name = context.componentName
        step = spec.options[Self.step]
        events = context.events
        state = Mutex((spec.options[Self.db], []))
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        stream == .audio ? .process(takes: .raw) : .passThrough
    }

    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let volume = try ElementCatalog.make("volume")
        let db = try state.withLock { state in
            try volume.set("volume", Self.linear(state.db))
            state.volumes.append(volume)
            return state.db
        }
        // The figure from the start, so the status shows the gain before anyone moves it.
        events.emit(.stage(StageEvent(stage: self.name, name: "gain-changed", fields: ["applied_db": db], figures: [Self.figure: db])))
        return try BinChain.make(name, [volume])
    }

    public func perform(_ command: String, _ adjustment: StageAdjustment) -> StageEvent? {
        let (requested, applied) = state.withLock { state in
            let requested = switch adjustment {
            case .set(let db): db
            case .step(let steps): state.db + step * Double(steps)
            }
            state.db = min(max(requested, Self.range.lowerBound), Self.range.upperBound)
            // volume's property is taken under its own lock: safe from any thread while it runs.
            for volume in state.volumes { try? volume.set("volume", Self.linear(state.db)) }
            return (requested, state.db)
        }
        let clamped = applied != requested ? String(format: " (asked %+.1f dB)", requested) : ""
        let answer = StageEvent(
            stage: name, name: "gain-changed", command: command,
            fields: ["requested_db": requested, "applied_db": applied], figures: [Self.figure: applied],
            line: String(format: "gain %+.1f dB", applied) + clamped)
        events.emit(.stage(answer))
        return answer
    }

    /// dB to the `volume` element's linear factor.
    static func linear(_ db: Double) -> Double { pow(10, db / 20) }
}
