import Foundation
import Testing
@testable import PipelineConfig

/// Nine levels of nine aliases would expand to 387 million values: refused at once, with the fix.
@Test("a YAML alias bomb is refused in well under a second, with one line")
func aliasBombRefused() {
    var lines = ["version: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in 1...9 { lines.append("a\(level): &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 9).joined(separator: ", ") + "]") }
    lines += ["source: { test: { audio: {} } }", "sinks: [ { null: {} } ]"]
    let started = ContinuousClock.now
    let errors = errorLines(lines.joined(separator: "\n") + "\n")
    #expect(ContinuousClock.now - started < .seconds(1))
    #expect(errors.count == 1 && errors.first?.hasPrefix("x.yaml: the file expands to more than 100000 values") == true, "\(errors)")
}

@Test("a few aliases, as a real file might use them, still load")
func modestAliasesLoad() {
    let yaml = """
        version: 1
        source: { test: { audio: &tone { tone: 440 } } }
        sinks: [ { null: {} } ]
        """
    #expect(errorLines(yaml).isEmpty)
}
