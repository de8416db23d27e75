import PipelineConfig

/// What differs between the running pipeline file and a new one, as a swap sees
/// it. The chain is the source then the stages (source 0, `stages[i]` i + 1):
/// parts before the first change keep running, the rest of the chain is rebuilt.
/// Sinks are compared one by one: an unchanged sink keeps its connection.
public struct SpecDiff: Sendable, Equatable {
    /// How many chain parts, from the source on, are kept as they run.
    public let keptChain: Int
    /// Chain parts among the kept whose options changed and that take them in place.
    public let adjustedChain: [Int]
    /// Indexes of the sinks kept as they run (same kind, name and options, same place).
    public let keptSinks: Set<Int>
    /// Lines for the reload event, e.g. `source: test → file`, `stages[1] gst added`.
    public let changes: [String]
    /// Something in the file that a running pipeline cannot take; the swap is refused.
    public let refusal: String?

    public var isEmpty: Bool { changes.isEmpty && refusal == nil }

    /// Every part is kept (some taking new options in place): nothing is rebuilt.
    public let rebuildsNothing: Bool

    /// `adjustable`: whether the running chain part at an index takes its new options in place
    /// (asked only of a part whose kind and name stay).
    public init(old: PipelineSpec, new: PipelineSpec, adjustable: (Int) -> Bool = { _ in false }) {
        let oldChain = [old.source] + old.stages, newChain = [new.source] + new.stages
        var kept = 0
        var adjusted: [Int] = []
        while kept < min(oldChain.count, newChain.count) {
            let (was, now) = (oldChain[kept], newChain[kept])
            if !Self.same(was, now) {
                guard was.kind == now.kind, was.name == now.name, adjustable(kept) else { break }
                adjusted.append(kept)
            }
            kept += 1
        }
        keptChain = kept
        adjustedChain = adjusted
        keptSinks = Set(old.sinks.indices.filter { $0 < new.sinks.count && Self.same(old.sinks[$0], new.sinks[$0]) })
        refusal = old.name == new.name ? nil
            : "name: a running pipeline keeps its name (\(old.name)); restart castline to rename it"
        rebuildsNothing = refusal == nil && kept == oldChain.count && kept == newChain.count
            && old.sinks.count == new.sinks.count && keptSinks.count == new.sinks.count
        var changes = adjusted.map { "\(Self.label($0)) \(newChain[$0].kind) changed in place" }
        changes += Self.chainChanges(old: oldChain, new: newChain, from: kept)
        for index in 0..<max(old.sinks.count, new.sinks.count) where !keptSinks.contains(index) {
            switch (old.sinks[safe: index], new.sinks[safe: index]) {
            case let (was?, now?) where was.kind == now.kind: changes.append("sinks[\(index)] \(now.kind) changed (reconnects)")
            case let (was?, now?): changes.append("sinks[\(index)]: \(was.kind) → \(now.kind)")
            case let (nil, now?): changes.append("sinks[\(index)] \(now.kind) added")
            case let (was?, nil): changes.append("sinks[\(index)] \(was.kind) removed")
            case (nil, nil): break
            }
        }
        self.changes = changes
    }

    /// A chain part's place as the file names it: `source`, `stages[1]`.
    static func label(_ place: Int) -> String { place == 0 ? "source" : "stages[\(place - 1)]" }

    /// Same part: kind, name and options (its place in the file aside).
    static func same(_ a: ComponentSpec, _ b: ComponentSpec) -> Bool {
        a.kind == b.kind && a.name == b.name && a.options == b.options
    }

    /// The chain's changes from `start` on, told as edits: the common tail is matched
    /// first, so inserting one stage reads as one addition, not as every later stage changing.
    private static func chainChanges(old: [ComponentSpec], new: [ComponentSpec], from start: Int) -> [String] {
        var tail = 0
        while tail < min(old.count, new.count) - start,
              same(old[old.count - 1 - tail], new[new.count - 1 - tail]) { tail += 1 }
        let oldMiddle = Array(old[start..<(old.count - tail)]), newMiddle = Array(new[start..<(new.count - tail)])
        var lines: [String] = []
        for offset in 0..<max(oldMiddle.count, newMiddle.count) {
            let label = Self.label(start + offset)
            switch (oldMiddle[safe: offset], newMiddle[safe: offset]) {
            case let (was?, now?) where was.kind == now.kind: lines.append("\(label) \(now.kind) changed")
            case let (was?, now?): lines.append("\(label): \(was.kind) → \(now.kind)")
            case let (nil, now?): lines.append("\(label) \(now.kind) added")
            case let (was?, nil): lines.append("\(label) \(was.kind) removed")
            case (nil, nil): break
            }
        }
        return lines
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
