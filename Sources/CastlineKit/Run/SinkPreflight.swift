extension PipelinePlan {
    /// Each sink checks its far end (`SinkComponent.preflight`) before anything starts. A
    /// destination that fails while another destination passes is left out, and the run goes on
    /// without it (and fails at its end, naming it); otherwise the first failure ends the run
    /// here. Bad input (a sound device named and missing) always ends it.
    nonisolated(nonsending) func preflighted() async throws -> (PipelinePlan, leftOut: [RunModel.LostSink]) {
        var failures: [(index: Int, error: BuildError)] = []
        for (index, part) in sinks.enumerated() {
            do {
                try await located(part.spec.keyPath) { try await part.component.preflight() }
            } catch let error as BuildError {
                try Task.checkCancellation()
                failures.append((index, error))
            }
        }
        guard let first = failures.first?.error else { return (self, []) }
        let failed = Set(failures.map(\.index))
        let destinationsLeft = sinks.indices.contains { sinks[$0].component.isDestination && !failed.contains($0) }
        let onlyDestinations = failures.allSatisfy { sinks[$0.index].component.isDestination && !$0.error.isBadInput }
        guard destinationsLeft, onlyDestinations else {
            // Every failure is named: fixing one URL of two would only show the next.
            throw failures.count == 1 ? first : BuildError(failures.map { "\($0.error)" }.joined(separator: "; "),
                                                           badInput: failures.contains { $0.error.isBadInput })
        }
        let kept = sinks.indices.filter { !failed.contains($0) }.map { sinks[$0] }
        channel.destinations.store(kept.filter(\.component.isDestination).count, ordering: .relaxed)
        let leftOut = failures.map { RunModel.LostSink(keyPath: sinks[$0.index].spec.keyPath, reason: $0.error.message) }
        return (PipelinePlan(spec: spec, channel: channel, source: source, stages: stages, sinks: kept), leftOut)
    }
}
