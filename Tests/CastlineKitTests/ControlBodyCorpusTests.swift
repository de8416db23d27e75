import CastlineKit
import Foundation
import Testing

/// Every kept control-body fuzz input (Fuzz/corpus/control-body) as the fuzzer feeds it: as a
/// JSON body and as a `castline ctl set` change, for the delay's and the gain's ranges.
@Suite struct ControlBodyCorpusTests {
    @Test("each is taken within the command's range, or refused")
    func bodies() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/control-body")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        try #require(!files.isEmpty)
        var taken = 0
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            let text = String(decoding: data, as: UTF8.self)
            for (field, range) in [("seconds", 0.0...2_592_000), ("db", -60.0...20)] {
                for adjustment in [try? StageAdjustment(json: data, valueField: field, range: range),
                                   StageAdjustment(text: text, range: range, parseValue: { Double($0) })] {
                    switch adjustment {
                    case .set(let value)?:
                        taken += 1
                        #expect(range.contains(value), "\(file): \(value)")
                    case .step(let steps)?:
                        taken += 1
                        #expect(steps.magnitude <= UInt(StageAdjustment.stepLimit), "\(file): \(steps)")
                    case nil: break
                    }
                }
            }
        }
        #expect(taken > 0)
    }
}
