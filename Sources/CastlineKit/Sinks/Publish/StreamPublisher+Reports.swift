import Foundation

/// What a publish says as it goes: a status line a second, and its counters as stats figures.
extension StreamPublisher {
    /// A status line each second while the publish runs: time up, send rate, bytes acknowledged.
    func reportEverySecond() {
        Task { [weak self] in
            while let self {
                try? await Task.sleep(for: .seconds(1))
                let output = self.state.withLock { $0.connectedSince != nil ? $0.output : nil }
                var link: [String: Double] = [:]
                if let output { link = await self.settings.output.linkFigures(output) }
                guard let (line, figures) = self.statusLine(link: link) else { return }
                self.context.events.emit(.status(line, source: self.context.componentName))
                // The same numbers for stats outputs (JSON, metrics, summary), under the sink's name.
                self.context.events.emit(.stats(StatsSample(stage: self.context.componentName, stream: nil, figures: figures)))
            }
        }
    }

    /// `link`: what the connection says of itself (`PublishOutput.linkFigures`).
    private func statusLine(link: [String: Double]) -> (String, [String: Double])? {
        state.withLock { state -> (String, [String: Double])? in
            if case .finished = state.phase { return nil }
            let counters = counters(&state)
            let rate = Double(counters.sent &- state.lastSent) * 8 / 1000
            state.lastSent = counters.sent
            let condition: String
            switch state.phase {
            case .waitingToRetry: condition = "reconnecting"
            case .publishing where state.connectedSince != nil: condition = "publishing"
            case .publishing where settings.output.waitsForCallers: condition = "waiting for a caller"
            default: condition = "connecting"
            }
            var figures = figures(&state).merging(link) { $1 }
            figures[StatsFigure.bitrate] = condition == "publishing" ? rate : 0
            let seconds = Int(state.publishedSoFar.seconds)
            var line = "\(condition) \(seconds / 60):\(String(format: "%02d", seconds % 60))  "
                + String(format: "%.0f kbit/s", condition == "publishing" ? rate : 0)
                + "  \(counters.text)  reconnects \(state.reconnects)"
            if let rtt = link[StatsFigure.roundTrip] { line += String(format: "  rtt %.0f ms", rtt) }
            if let lost = link[StatsFigure.packetsLost] { line += String(format: "  lost %.0f", lost) }
            return (line, figures)
        }
    }

    /// What every connection so far sent and had confirmed. A listener's caller that leaves takes
    /// its ACK count out of srtsink's stats: what it had stays counted, so no figure goes back.
    func counters(_ state: inout State) -> PublishCounters {
        var total = state.earlier + settings.output.counters(state.output)
        let gone = total.shortfall(below: state.shown)
        state.earlier = state.earlier + gone
        total = total + gone
        state.shown = total
        return total
    }

    /// The publish's counters as figures, under the sink's name: what stats outputs and the summary read.
    func figures(_ state: inout State) -> [String: Double] {
        var figures = counters(&state).figures
        figures[StatsFigure.reconnects] = Double(state.reconnects)
        figures[StatsFigure.publishedTime] = state.publishedSoFar.seconds
        return figures
    }
}
