@testable import CastlineKit
import Testing

/// What a publish that never connected says, from what rtmp2sink's last attempt reported.
@Suite("RTMP: why nothing was published")
struct RTMPVerdictTests {
    static func output(_ url: String) throws -> RTMPOutput {
        RTMPOutput(location: { "" }, insecureTLS: false, endpoint: try RTMPSink.parse(url: url, at: "sinks[0].rtmp.url"))
    }

    @Test("each cause names its own fix: a wrong app, the key pasted onto the URL, a key already live, a refused port")
    func causes() throws {
        let wrongApp = try Self.output("rtmp://ingest.example/wrongapp")
            .neverConnected(reason: "'connect' cmd failed: connection closed remotely", waited: .seconds(3))
        #expect(wrongApp.contains("refused the app \"wrongapp\"") && wrongApp.contains("check the application path"), "\(wrongApp)")
        let pasted = try Self.output("rtmp://ingest.example/live/mykey")
            .neverConnected(reason: "'connect' cmd failed: connection closed remotely", waited: .seconds(3))
        #expect(pasted.contains("if mykey is the stream key"), "\(pasted)")
        let live = try Self.output("rtmp://ingest.example/live")
            .neverConnected(reason: "'publish' cmd failed: NetStream.Publish.BadName: Already publishing", waited: .seconds(3))
        #expect(live.contains("already publishing") && live.contains("another key"), "\(live)")
        let refused = try Self.output("rtmp://ingest.example/live")
            .neverConnected(reason: "Connection refused: Could not connect to 127.0.0.1: Connection refused", waited: .seconds(3))
        #expect(refused.contains("Connection refused") && refused.contains("check the URL"), "\(refused)")
    }
}

@Suite("network URLs: ports")
struct URLPortTests {
    @Test("a port outside 1 to 65535 is refused where the URL is read (rtmp2sink took 99999 as 1935 and published there)")
    func outOfRange() throws {
        for (url, parse) in [
            ("rtmp://127.0.0.1:99999/live", { try _ = RTMPSink.parse(url: $0, at: "u") }),
            ("rtmp://127.0.0.1:0/live", { try _ = RTMPSink.parse(url: $0, at: "u") }),
            ("srt://127.0.0.1:70000", { try _ = SRTOutput(url: $0, passphrase: nil, latencyMilliseconds: 120, at: "u") }),
            ("http://127.0.0.1:65536/whip", { try _ = WHIPSink.parse(url: $0, at: "u") }),
        ] as [(String, (String) throws -> Void)] {
            #expect(throws: BuildError.self, "\(url)") { try parse(url) }
            do { try parse(url) } catch {
                #expect("\(error)".contains("port") && "\(error)".contains("out of range (use 1 to 65535)"), "\(url): \(error)")
            }
        }
        #expect(try RTMPSink.parse(url: "rtmp://127.0.0.1:65535/live", at: "u").port == 65_535)
    }
}
