import Foundation
import Testing

/// Errors a component finds after the schema (a cross-field check, a scheme, an element)
/// still name the key's line and column, as every other error does.
@Suite("cross-field errors keep their place", .timeLimit(.minutes(1)))
struct LocatedErrorTests {
    @Test("initial beyond max, an unknown URL scheme, an unknown element: FILE:LINE:COL: key.path, exit 2")
    func located() async throws {
        let scratch = try Scratch()
        let cases: [(yaml: String, expected: String)] = [
            ("version: 1\nsource: { test: { audio: {} } }\nstages:\n  - delay: { initial: 2h, max: 10m }\nsinks: [ { null: {} } ]\n",
             ":4:23: stages[0].delay.initial: initial 2h is more than max 10m"),
            ("version: 1\nsource: { test: { audio: {} } }\nsinks:\n  - rtmp:\n      url: gopher://x/app\n      key: abc\n",
             ":5:12: sinks[0].rtmp.url: unknown scheme \"gopher\""),
            ("version: 1\nsource: { test: { audio: {} } }\nstages:\n  - gst: \"no-such-element\"\nsinks: [ { null: {} } ]\n",
             ":4:10: stages[0].gst.description: "),
        ]
        for (index, item) in cases.enumerated() {
            let file = try scratch.write("bad\(index).yaml", item.yaml)
            let result = try await Castline.run(["validate", file])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasPrefix(file + item.expected), "\(result.stderr)")
        }
    }
}
