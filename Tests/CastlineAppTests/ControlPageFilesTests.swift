import CastlineKit
import Foundation
import Testing
@testable import CastlineApp

@Suite("the control page's files, its origin rule, and the plot it shows")
struct ControlPageFilesTests {
    @Test("the page's files are in the binary, each with its type, and the page names only files there are")
    func embedded() throws {
        let files = ControlPage.files
        #expect(files["index.html"]?.contentType == "text/html; charset=utf-8")
        #expect(files["page.js"]?.contentType == "text/javascript; charset=utf-8")
        #expect(files["page.css"]?.contentType == "text/css; charset=utf-8")
        #expect(files["favicon.svg"]?.contentType == "image/svg+xml")
        let page = try #require(files["index.html"]).body.getString(at: 0, length: try #require(files["index.html"]).body.readableBytes) ?? ""
        let named = page.matches(of: /(?:src|href)="([^"]+)"/).map { String($0.output.1) }
        #expect(named.sorted() == ["editor.js", "favicon.svg", "logic.js", "page.css", "page.js"], "\(named)")
        for name in named { #expect(files[name] != nil, "index.html names \(name), which is not served") }
    }

    @Test("Host names that are this machine, with or without a port; others are not")
    func loopbackHosts() {
        for host in ["127.0.0.1:7070", "127.0.0.1", "localhost:80", "LOCALHOST", "[::1]:7070", "127.3.2.1:1"] {
            #expect(SameOrigin.isLoopback(host: host), "\(host)")
        }
        for host in ["", "evil.example:7070", "127.0.0.1.evil.example", "10.0.0.1:7070", "[::2]:7070", "localhost.evil:1"] {
            #expect(!SameOrigin.isLoopback(host: host), "\(host)")
        }
    }

    static func event(_ seconds: Double, _ kind: RunEvent.Kind) -> RunEvent {
        RunEvent(time: Date(timeIntervalSince1970: 1_000 + seconds), pipeline: "p", kind: kind)
    }

    @Test("pauses, reconnects and swaps are marked on the plot; the live view shows the last seconds only")
    func marksAndWindow() {
        var data = PlotData()
        for second in 0...20 {
            data.add(Self.event(Double(second), .stats(StatsSample(stage: "meter", stream: .audio,
                                                                   figures: [StatsFigure.bitrate: 100 + Double(second)]))))
        }
        data.add(Self.event(0.5, .stateChanged(from: .connecting, to: .playing)))
        data.add(Self.event(5, .stateChanged(from: .playing, to: .paused)))
        data.add(Self.event(7, .stateChanged(from: .paused, to: .playing)))
        data.add(Self.event(12, .stateChanged(from: .playing, to: .reconnecting)))
        data.add(Self.event(15, .reloaded(changes: ["stages[0]"], took: .milliseconds(20))))
        #expect(data.marks.map(\.label) == ["paused", "playing", "reconnecting", "swapped"])
        #expect(data.marks.map(\.time) == [5, 7, 12, 15])

        let whole = StatsPlot.svg(data, title: "p")
        #expect(whole.matches(of: /class="mark"/).count == 4)
        let last = StatsPlot.svg(data, title: "p", last: 10)
        #expect(last.matches(of: /class="mark"/).count == 2, "only the marks of the last 10 s")
        let points = try? #require(last.firstMatch(of: /data-name="meter audio"[^>]*points="([^"]*)"/)).output.1
        #expect(points?.split(separator: " ").count == 11, "the points of seconds 10 to 20")
    }

    @Test("time 0 is when the run began to play: a sample is drawn at the end of the interval it covers, not one interval early")
    func timeFromPlaying() {
        var data = PlotData()
        data.add(Self.event(0, .stateChanged(from: .connecting, to: .playing)))
        for second in 1...3 {
            data.add(Self.event(Double(second), .stats(StatsSample(stage: "meter", stream: .audio, figures: [StatsFigure.bitrate: 128]))))
        }
        #expect(data.bitrate.first?.points.map(\.time) == [1, 2, 3])
    }

    @Test("an HLS source's buffer and the test signal's A/V offset get their own panels, when reported")
    func panels() {
        var data = PlotData()
        data.add(Self.event(0, .stats(StatsSample(stage: "meter", stream: .audio, figures: [StatsFigure.bitrate: 128]))))
        #expect(!StatsPlot.svg(data, title: "p").contains("id=\"buffered\""))
        data.add(Self.event(1, .stats(StatsSample(stage: "hls0", stream: nil, figures: [StatsFigure.hlsBuffered: 6]))))
        data.add(Self.event(1, .stats(StatsSample(stage: "latency0", stream: nil, figures: ["av_offset_ms": -40]))))
        let svg = StatsPlot.svg(data, title: "p")
        #expect(svg.contains("<g id=\"buffered\">") && svg.contains("<g id=\"av-offset\">"))
        #expect(svg.contains("height=\"1180\""), "four panels: bitrate, level, buffer, offset")
    }
}
