import CastlineKit

/// The figures registered components declare, found by what they mean (see `Figure`).
enum DeclaredFigures {
    static let all = PipelineFiles.registry.figures
    /// Seconds behind live, drawn together: a delay, what a source or the test signal's clock says.
    static let behindLive = all.filter {
        if case .measuredLatency = $0.meaning { return true }
        return $0.meaning == .behindLive
    }
    /// Figures that say where play-out sits behind live (a delay): when one moves, what was
    /// measured before no longer holds.
    static let playoutPlace = Set(all.filter { $0.meaning == .behindLive }.map(\.name))
    static let audioLatency = all.first(meaning: .measuredLatency(.audio))
    static let videoLatency = all.first(meaning: .measuredLatency(.video))
    static let avOffset = all.first(meaning: .avOffset)
    static let silences = all.first(meaning: .silences)
    static let level = all.first(meaning: .level)
    static let frameRate = all.first(meaning: .frameRate)
    static let bytes = all.first(meaning: .bytes)
    static let loudness = all.first(meaning: .loudness)
    /// What the summary and `castline latency` give of the test signal's clock, in this order.
    static let measured = [audioLatency, videoLatency, avOffset].compactMap { $0 }
}

extension Dictionary where Key == String, Value == Double {
    /// A declared figure's value, when it is declared and was reported.
    subscript(figure figure: Figure?) -> Double? {
        figure.flatMap { self[$0.name] }
    }
}
