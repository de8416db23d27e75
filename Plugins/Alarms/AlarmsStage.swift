import CastlineKit
import Foundation
import Synchronization

/// Watches the sound and the picture for trouble and passes them on: silence, loudness over or
/// under an EBU R128 target, true-peak clipping, a black or frozen picture. Each alarm is raised
/// once its fault has lasted its hold time and cleared once the fault is gone, as `alarm-raised`
/// and `alarm-cleared` events (kind, stream, value, threshold, since); loudness and true peak
/// are reported as figures. The checks need decoded media: the stage takes raw streams, and only
/// those with a check that is on (an audio-only set of checks leaves the video as it is).
public final class AlarmsStage: Stage {
    public static let kind = "alarms"
    public static let summary = "raise alarms for silence, loudness, clipping, a black or frozen picture; media passes on"
    public static let schema = AlarmSettings.schema
    public static let raisedEvent = "alarm-raised"
    public static let clearedEvent = "alarm-cleared"
    public static let momentary = Figure("loudness_m_lufs", label: "momentary loudness", meaning: .other)
    public static let shortTerm = Figure("loudness_s_lufs", label: "short-term loudness", meaning: .loudness)
    public static let integrated = Figure("loudness_i_lufs", label: "integrated loudness", meaning: .other)
    public static let truePeak = Figure("true_peak_dbtp", label: "true peak", meaning: .other)
    public static let active = Figure("alarms_active", label: "alarms raised now", meaning: .alarmsActive)
    public static let figures = [momentary, shortTerm, integrated, truePeak, active]

    let settings: AlarmSettings
    private let context: ComponentContext
    private struct Checks {
        var sound: SoundChecks?
        var picture: PictureChecks?
        var audioFormat: (rate: Int, channels: Int)?
        var videoSize: (width: Int, height: Int)?
        var segments: [StreamKind: SegmentInfo] = [:]
        var streams: Set<StreamKind> = []
    }
    private let checks = Mutex(Checks())
    private let timerStarted = Atomic(false)
    /// Alarm changes go out when what they were found in plays.
    private let played = PlayTimeGate()

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        settings = AlarmSettings(spec.options)
        self.context = context
        guard settings.every >= .milliseconds(100) else { throw BuildError("must be at least 100ms (try 1s)", at: "\(spec.keyPath).every") }
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        settings.active(on: stream).isEmpty ? .passThrough : .process(takes: .raw)
    }

    /// Audio as interleaved F32 (what libebur128 reads); video in a layout whose first plane is luma.
    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let identity = try ElementCatalog.make("identity")
        try identity.set("silent", true)
        let parts = try BinChain.rawForReading(stream) + [identity]
        _ = checks.withLock { $0.streams.insert(stream) }
        played.timed(by: identity)
        identity.staticPad("src")?.addProbe([.buffer, .eventDownstream]) { [weak self] info in
            guard let self else { return .ok }
            if let event = info.event {
                self.handle(event, stream: stream)
            } else if let buffer = info.buffer {
                self.startTimer()
                self.read(buffer, stream: stream)
            }
            return .ok
        }
        return try BinChain.make(name, parts)
    }

    private func handle(_ event: EventView, stream: StreamKind) {
        switch event.kind {
        case .caps:
            guard let structure = event.caps?.structure(at: 0) else { return }
            checks.withLock { checks in
                if stream == .audio, let rate = structure.int("rate"), let channels = structure.int("channels"),
                   checks.audioFormat.map({ $0 != (rate, channels) }) ?? true {
                    checks.audioFormat = (rate, channels)
                    checks.sound = SoundChecks(rate: rate, channels: channels, settings: settings)
                } else if stream == .video, let width = structure.int("width"), let height = structure.int("height"),
                          checks.videoSize.map({ $0 != (width, height) }) ?? true {
                    checks.videoSize = (width, height)
                    checks.picture = PictureChecks(width: width, height: height, settings: settings)
                }
            }
        case .segment:
            if let segment = event.segment { checks.withLock { $0.segments[stream] = segment } }
        case .eos:
            // What was found and waits to play is told now: nothing more plays after the end.
            played.flush()
            // The figures up to the end (the integrated loudness of the whole), not of a second before it.
            _ = report()
        default:
            break
        }
    }

    private func read(_ buffer: BufferView, stream: StreamKind) {
        guard let pts = buffer.pts else { return }
        var plays: ClockTime?
        let changes: [AlarmChange] = checks.withLock { checks in
            let start = Self.mediaSeconds(pts, segment: checks.segments[stream])
            plays = checks.segments[stream]?.runningTime(of: pts)
            switch stream {
            case .audio:
                guard let sound = checks.sound else { return [] }
                return buffer.withUnsafeBytes { sound.feed($0.bindMemory(to: Float.self), start: start) } ?? []
            case .video:
                guard var picture = checks.picture else { return [] }
                let layout = buffer.firstPlane ?? (0, (picture.width + 3) & ~3)
                let end = start + (buffer.duration.map { Double($0.nanoseconds) / 1e9 } ?? 1.0 / 30)
                let found = buffer.withUnsafeBytes {
                    picture.feed($0, offset: layout.offset, stride: layout.stride, start: start, end: end)
                } ?? []
                checks.picture = picture
                return found
            }
        }
        for change in changes { played.offer(runningTime: plays) { [weak self] in self?.say(change) } }
    }

    /// Told as what it was found in plays.
    private func say(_ change: AlarmChange) {
        // Where the fault began on the wall clock: as far back from now as it is in the media.
        let since = change.wallSince(now: Date())
        context.events.emit(.stage(Self.event(change, stage: context.componentName, since: since, mediaSince: change.since)))
    }

    /// Seconds of the stream (its own time, as a player's position shows it) of a buffer at `pts`.
    static func mediaSeconds(_ pts: ClockTime, segment: SegmentInfo?) -> Double {
        let time = segment.flatMap { segment in segment.runningTime(of: pts).flatMap { segment.streamTime(ofRunningTime: $0) } } ?? pts
        return Double(time.nanoseconds) / 1e9
    }


    /// An alarm's event, as the stage and `FigureAlarms` both say it: `since` where the fault
    /// began on the wall clock; `mediaSince` where in the stream (the media checks).
    static func event(_ change: AlarmChange, stage: String, since: Date, mediaSince: Double?) -> StageEvent {
        let stream = change.kind.stream ?? change.stream
        var fields = ["value": change.value, "threshold": change.threshold]
        if let mediaSince { fields["since_s"] = mediaSince }
        let on = stream.map { " on \($0)" } ?? ""
        let line: String
        switch change.edge {
        case .raised:
            fields["hold_s"] = change.hold
            // On the wall clock as the events' `since` is (UTC, 24-hour), not in the locale's 12-hour form.
            let when = mediaSince.map(clock) ?? since.formatted(.iso8601.time(includingFractionalSeconds: false)) + " UTC"
            line = "alarm: \(change.kind.rawValue)\(on) since \(when) (\(describe(change)))"
        case .cleared:
            fields["lasted_s"] = change.at - change.since
            line = "cleared: \(change.kind.rawValue)\(on) after \(String(format: "%.1f", change.at - change.since)) s"
        }
        return StageEvent(stage: stage, stream: stream, name: change.edge == .raised ? raisedEvent : clearedEvent,
                          fields: fields.compactMapValues { $0 }, labels: ["kind": change.kind.rawValue, "since": iso(since)], line: line)
    }

    static func clock(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }

    static func iso(_ date: Date) -> String { date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)) + "Z" }

    /// What crossed what, in the check's own unit.
    static func describe(_ change: AlarmChange) -> String {
        switch change.kind {
        case .silence: String(format: "%.0f dBFS, under %.0f dBFS", change.value, change.threshold)
        case .loud: String(format: "%.1f LUFS short-term, over %.1f", change.value, change.threshold)
        case .quiet: String(format: "%.1f LUFS short-term, under %.1f", change.value, change.threshold)
        case .clipping: String(format: "true peak %+.1f dBTP, over %+.1f", change.value, change.threshold)
        case .black: String(format: "%.0f %% of the picture black", change.value * 100)
        case .frozen: String(format: "unchanged for %.1f s", change.value)
        case .stalled: String(format: "no new media for %.1f s", change.value)
        case .slowDownload: String(format: "a segment fetched at %.2fx real time, under %.2fx", change.value, change.threshold)
        case .behindLive: String(format: "%.1f s behind live, over %.0f s", change.value, change.threshold)
        case .avDrift: String(format: "a/v %+.0f ms, over ±%.0f ms", change.value, change.threshold)
        case .bitrate: String(format: "%.0f kbit/s, under %.0f kbit/s", change.value, change.threshold)
        case .reconnecting: String(format: "reconnecting for %.0f s", change.value)
        }
    }

    private func startTimer() {
        guard !timerStarted.load(ordering: .relaxed),
              timerStarted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        FixedBeat.start(every: settings.every) { [weak self] in self?.report() ?? false }
    }

    /// Loudness and true peak on audio, and the alarms raised now on each stream checked.
    private func report() -> Bool {
        let samples: [(StreamKind, [String: Double])] = checks.withLock { checks in
            var samples: [(StreamKind, [String: Double])] = []
            if let sound = checks.sound {
                var figures = sound.figures()
                figures[Self.active.name] = Double(sound.raised.count)
                samples.append((.audio, figures))
            }
            if let picture = checks.picture { samples.append((.video, [Self.active.name: Double(picture.raised.count)])) }
            return samples
        }
        for (stream, figures) in samples {
            context.events.emit(.stats(StatsSample(stage: context.componentName, stream: stream, figures: figures)))
        }
        return true
    }
}

extension StageEvent {
    /// An alarm raised or cleared, and its kind; nil for any other event (the one way the rest
    /// of castline reads an alarm event).
    public var alarm: (kind: String, raised: Bool)? {
        guard let kind = labels["kind"], name == AlarmsStage.raisedEvent || name == AlarmsStage.clearedEvent else { return nil }
        return (kind, name == AlarmsStage.raisedEvent)
    }
}
