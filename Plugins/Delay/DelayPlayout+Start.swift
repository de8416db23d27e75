import CastlineKit
import Foundation

/// How play-out starts: once the history holds the initial delay, on the live edge when the
/// source estimates one.
extension DelayPlayout {
    /// Starts play-out once the history holds the initial delay (and the clock
    /// runs, and a promised live-edge estimate is in): the unit that plays first
    /// is the one due `lead` from now. Until then says how full it is.
    func startIfHeld(_ state: inout State, now: UInt64?, said: inout [RunEvent.Kind]) -> Bool {
        if let now { anchorOnLiveEdge(&state, now: now) }
        let available = history.available
        // A source that started back fills this at once; otherwise it grows in real time.
        guard available >= state.requested else {
            let percent = Int(available.seconds / max(state.requested.seconds, 0.001) * 100)
            if percent / 5 != state.bufferingPercent / 5 {
                state.bufferingPercent = percent
                said.append(.buffering(percent: percent))
            }
            return false
        }
        guard let now else { return false }
        if state.liveAnchor == nil, let deadline = state.liveEdgeDeadline {
            guard ContinuousClock.now >= deadline else { return false }
            state.liveEdgeDeadline = nil
            said.append(.notice("\(name): the source gave no live-edge estimate; delay counts from this start"))
        }
        var first = Int64(clamping: now) + Self.lead.totalNanoseconds - state.requested.totalNanoseconds - state.anchor
        if state.liveAnchor != nil, let newest = history.newest, first > Int64(clamping: newest) {
            // Not here yet: the appsinks have just been told to take it earlier (see `anchorOnLiveEdge`).
            let since = state.dueMissingSince ?? .now
            state.dueMissingSince = since
            guard ContinuousClock.now - since >= Self.dueWait else { return false }
            // Still not: the estimate is ahead of what the source has. Play that much later, and say so.
            let late = first - Int64(clamping: newest)
            state.liveAnchor = state.anchor + late
            first -= late
            said.append(.notice(String(format: "%@: the media is %.2f s behind the live-edge estimate; playing that much later",
                                       name, Double(late) / 1e9)))
        }
        // Filling was said: its end is too (a summary counts buffering until then).
        if state.bufferingPercent >= 0 { said.append(.buffering(percent: 100)) }
        state.applied = state.requested
        var cursor = HistoryCursor(delay: .zero, position: nil)
        history.seek(&cursor, toPosition: UInt64(max(0, first)))
        state.cursor = cursor
        said.append(.stage(DelayReport.changed(stage: name, requested: state.requested, applied: state.requested,
                                               available: available, answering: false)))
        return true
    }

    /// Works out delay 0's anchor from a new live-edge estimate (until play-out
    /// starts), and has the appsinks take the media early enough for it: a player
    /// started later or earlier plays further behind the edge than `hold-back`.
    func anchorOnLiveEdge(_ state: inout State, now: UInt64) {
        guard state.cursor == nil, let edge = state.liveEdge, edge != state.anchoredEdge,
              let offset = timeline.latestOffset(stream: 0) else { return }
        state.anchoredEdge = edge
        let anchor = LiveAnchor.shift(edge: edge, runningNow: now, monotonicNow: MonotonicTime.now(), streamOffset: offset)
        state.liveAnchor = anchor
        let early = min(-Int64(clamping: state.startBack), anchor - Self.lead.totalNanoseconds - LiveAnchor.margin)
        for input in state.inputs { try? input.set("ts-offset", early) }
    }
}
