import Testing
import PipelineConfig

/// One bad pipeline file and the exact error lines it must produce.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var yaml: String
    var overrides: [String]
    var expect: [String]

    init(_ name: String, _ yaml: String, overrides: [String] = [], expect: [String]) {
        self.name = name
        self.yaml = yaml
        self.overrides = overrides
        self.expect = expect
    }

    var testDescription: String { name }
}

let badInputs = badInputsA + badInputsB

@Test(arguments: badInputs)
func badInputGivesExactErrors(_ input: BadInput) {
    #expect(errorLines(input.yaml, overrides: input.overrides) == input.expect)
}

@Test func badInputTableIsLarge() {
    #expect(badInputs.count >= 30)
    #expect(Set(badInputs.map(\.name)).count == badInputs.count)
}

@Test func missingFile() {
    #expect(throws: ConfigErrors.self) { try loader.load(contentsOf: "/nonexistent/x.yaml") }
    do {
        _ = try loader.load(contentsOf: "no/such/listen.yaml")
        Issue.record("expected an error")
    } catch {
        #expect(error.errors == [ConfigError(file: "no/such/listen.yaml", message: "no such file (check the path)")])
        #expect(error.description == "no/such/listen.yaml: no such file (check the path)")
    }
}

@Test func directoryIsNotAFile() {
    do {
        _ = try loader.load(contentsOf: "/tmp")
        Issue.record("expected an error")
    } catch {
        #expect(error.description == "/tmp: is a directory (pass a .yaml file)")
    }
}

@Test func errorsCarryPositionsAndKeyPaths() throws {
    let yaml = """
    version: 1
    source: { test: {} }
    stages:
      - delay: { initial: ten }
    sinks: [ null: {} ]
    """
    do {
        _ = try loader.load(yaml: yaml, file: "dir/listen.yaml")
        Issue.record("expected an error")
    } catch {
        let e = try #require(error.errors.first)
        #expect(e.file == "dir/listen.yaml")
        #expect(e.line == 4)
        #expect(e.column == 23)
        #expect(e.keyPath == "stages[0].delay.initial")
        #expect(e.message == "\"ten\" is not a duration (try 10s)")
    }
}

@Test(arguments: [
    (ConfigError(file: "a.yaml", line: 3, column: 5, keyPath: "k.p", message: "m"), "a.yaml:3:5: k.p: m"),
    (ConfigError(file: "a.yaml", line: 0, column: 0, keyPath: "k.p", message: "m"), "a.yaml: k.p: m"),
    (ConfigError(file: "a.yaml", line: 2, column: 1, keyPath: "", message: "m"), "a.yaml:2:1: m"),
    (ConfigError(file: "--set", message: "m"), "--set: m"),
])
func configErrorDescription(_ error: ConfigError, _ text: String) {
    #expect(error.description == text)
}

@Test func configErrorsArePrintedOnePerLine() {
    let errors = ConfigErrors([ConfigError(file: "a", message: "one"), ConfigError(file: "b", line: 1, column: 2, message: "two")])
    #expect(errors.description == "a: one\nb:1:2: two")
}
