import Foundation
import LocalIngest
import Testing

/// The page at `/` of the control API, driven in a real headless Chromium by Selenium
/// (Support/control_page.py, from the venv `make` builds), judged by the API's own /status.
@Suite("control page in a browser", .serialized, .timeLimit(.minutes(3)))
struct ControlPageTests {
    static let python = Castline.repositoryRoot + "/.venv/bin/python"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/control_page.py").path
    /// Screenshots of each run of the page, kept after the tests.
    static let artefacts = Castline.repositoryRoot + "/.build/artefacts"

    /// A tone through a delay, a gain and a stats stage: every control the page draws.
    static let steeredTone = """
        version: 1
        name: tone
        source:
          test:
            audio: { tone: 440 }
        stages:
          - delay: { initial: 0s, max: 1m }
          - gain: {}
          - stats: { every: 500ms, name: meter }
        sinks:
          - null: {}
        """

    /// Runs the browser script against castline `arguments` once it has printed its page's URL.
    private func drive(_ mode: String, _ arguments: [String], environment: [String: String] = [:]) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python), "no \(Self.python): run `make test`, which builds it")
        let scratch = try Scratch()
        let file = try scratch.write("tone.yaml", Self.steeredTone)
        let process = try Castline.start(["run", file] + arguments, environment: environment)
        defer { Task { await process.terminate() } }
        try #require(await Castline.waitFor("control page: http://", in: process, timeout: .seconds(20)), "\(process.standardError)")
        let line = process.standardError.split(separator: "\n").first { $0.hasPrefix("control page: ") }
        let url = String(try #require(line).dropFirst("control page: ".count))
        let browser = try await ChildProcess.run(Self.python, [Self.script, mode, url, Self.artefacts],
                                                 environment: environment, timeout: .seconds(120))
        #expect(browser.status == 0, "\(browser.stdout)\n\(browser.stderr)")
        #expect(browser.stdout.contains("ok"), "\(browser.stdout)")
        #expect(await Castline.interrupt(process) == 0, "\(process.standardError)")
        for secret in environment.values { #expect(!process.standardError.contains(secret), "the token is in castline's output") }
    }

    @Test("--ui: pause, skip back 10 s, drag the bar, gain, a bad file shown at its line, two pages in step, other origins refused")
    func steer() async throws {
        try await drive("steer", ["--ui"])
    }

    @Test("with a token: the page asks for it once and sends it as a bearer header, never in a URL")
    func token() async throws {
        let port = try FreePort.find()
        let token = "page-test-\(UUID().uuidString)"
        try await drive("token", ["--ui", "--control", "127.0.0.1:\(port)", "--control-token-env", "CONTROL_TOKEN"],
                        environment: ["CONTROL_TOKEN": token])
    }

    @Test("listen --ui measures the stream for the page, as a status line would, with no stats output asked for")
    func listenMeasuresForThePage() async throws {
        let url = "http://127.0.0.1:9/live.m3u8"
        let plain = try await Castline.run(["listen", url, "--print-pipeline"])
        let watched = try await Castline.run(["listen", url, "--ui", "--print-pipeline"])
        #expect(plain.status == 0 && watched.status == 0, "\(plain.stderr)\(watched.stderr)")
        #expect(!plain.stdout.contains("- stats"), "\(plain.stdout)")
        #expect(watched.stdout.contains("- stats"), "\(watched.stdout)")
    }
}
