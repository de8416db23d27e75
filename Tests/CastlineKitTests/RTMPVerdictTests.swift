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
