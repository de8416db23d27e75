import Foundation
import GstKit
import Synchronization

/// One simulated viewer of a live RTMP, SRT or WHEP stream: its own connection (`StreamConnection`),
/// nothing decoded. What arrives fills the same player's buffer as an HLS viewer's: play-out
/// starts once `jitterBuffer` seconds of media have come (a player's network caching: VLC's is
/// 1 s; a WebRTC player's jitter buffer far less), a stall is the media running out, and it plays on once that much is there again. A
/// connection that fails, goes quiet for `timeout` or ends is counted (as an error with no
/// HTTP status) and made again after a second, as a player retries; a first connection that
/// brings nothing fails the viewer.
public struct StreamViewer: Sendable {
    public enum Kind: String, Sendable {
        case rtmp, srt, whep

        /// Media a player holds before it shows the first frame, and again after a stall.
        var jitterBuffer: Double { self == .whep ? 0.5 : 1 }
    }

    /// The stream: its location with any key or passphrase in it (handed to GStreamer only), and
    /// what each secret shows as in a reason.
    public struct Stream: Sendable {
        public var kind: Kind
        var location: String
        /// A WHEP endpoint's bearer token.
        let token: Secret?
        /// The key or passphrase wherever it is used, as every line of a run masks it.
        let masker = SecretMasker(secrets: [])

        /// `url` (rtmp:// or rtmps:// with the stream key in its path or given as `key`; srt://
        /// with `passphrase` given apart; a WHEP endpoint, http(s) ending in /whep, with its
        /// `token`). The error is one line, naming the fix.
        public init(url: String, key: String?, passphrase: String?, token: String? = nil) throws(LoadInputError) {
            guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased() else { throw LoadInputError("\(url) is not a URL") }
            self.token = token.map { Secret($0) }
            if let token { masker.add(Secret(token)) }
            guard token == nil || ["http", "https"].contains(scheme) else { throw LoadInputError("a token is for WHEP endpoints (https://…/whep)") }
            switch scheme {
            case "http" where WebRTCEndpoint(url: url) == .whep, "https" where WebRTCEndpoint(url: url) == .whep:
                guard key == nil, passphrase == nil else { throw LoadInputError("a stream key or passphrase is not for a WHEP endpoint (it takes --token-env)") }
                kind = .whep
                location = url
            case "rtmp", "rtmps":
                guard passphrase == nil else { throw LoadInputError("a passphrase is for srt:// URLs") }
                kind = .rtmp
                if let key {
                    let base = url.hasSuffix("/") ? url : url + "/"
                    location = base + key
                    masker.add(use: location, masked: base + Secret.masked)
                    masker.add(Secret(key))
                } else {
                    let parts = parsed.path.split(separator: "/")
                    guard parts.count >= 2, let key = parts.last else {
                        throw LoadInputError("\(url) names no stream: give its key with --key-env VAR or --key-file PATH")
                    }
                    location = url
                    masker.add(use: url, masked: String(url.dropLast(url.hasSuffix("/") ? key.count + 1 : key.count)) + Secret.masked)
                    masker.add(Secret(String(key)))
                }
            case "srt":
                guard key == nil else { throw LoadInputError("a stream key is for rtmp:// URLs (an srt:// one takes --passphrase-env)") }
                guard !(parsed.queryItems ?? []).contains(where: { $0.name == "passphrase" }) else {
                    throw LoadInputError("the passphrase does not go in the URL, where it would show: use --passphrase-env VAR")
                }
                kind = .srt
                var made = URLComponents(string: SRTStreamID.escaped(url)) ?? parsed
                if let passphrase {
                    guard (10...79).contains(passphrase.count) else {
                        throw LoadInputError("an SRT passphrase has 10 to 79 characters (this one has \(passphrase.count))")
                    }
                    made.queryItems = (made.queryItems ?? []) + [URLQueryItem(name: "passphrase", value: passphrase)]
                }
                location = made.string ?? url
                if let passphrase {
                    masker.add(use: location, masked: url)
                    masker.add(Secret(passphrase))
                }
            default:
                throw LoadInputError("\(url) is not an RTMP, SRT or WHEP URL")
            }
        }

        /// The location as lines and plots show it: its secrets masked.
        public var shown: String { masking(location) }

        /// `text` with every secret masked.
        func masking(_ text: String) -> String { masker.mask(text) }
    }

    let number: Int
    let stream: Stream
    let tally: LoadTally
    let timeout: Duration

    public init(number: Int, stream: Stream, tally: LoadTally, timeout: Duration) {
        (self.number, self.stream, self.tally, self.timeout) = (number, stream, tally, timeout)
    }

    public func run() async {
        let began = ContinuousClock.now
        tally.started(number, at: began)
        let jitterBuffer = stream.kind.jitterBuffer
        var buffer = ViewerBuffer(resumeAhead: jitterBuffer)
        var waiting = 0.0  // media come before the first frame
        func elapsed() -> Double { (ContinuousClock.now - began).seconds }
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let ending = await follow { seconds, bytes in
                if buffer.firstFrame == nil {
                    waiting += seconds
                    guard waiting >= jitterBuffer else { return }
                    buffer.segmentFetched(duration: waiting, at: elapsed())
                } else {
                    buffer.segmentFetched(duration: seconds, at: elapsed())
                }
                tally.fetched(number, buffer: buffer, seconds: nil, bytes: bytes)
            }
            guard let reason = ending, !Task.isCancelled else { break }
            if attempt == 1, waiting == 0 {
                return tally.failed(number, reason: stream.masking(reason), httpError: false)
            }
            tally.trouble(number, status: nil, reason: stream.masking(reason))
            guard (try? await Task.sleep(for: .seconds(1))) != nil else { break }
        }
        tally.finished(number)
    }

    /// One connection, followed until it fails, goes quiet or ends (why: returned) or the viewer
    /// is cancelled (nil).
    private func follow(_ media: (Double, Int) -> Void) async -> String? {
        let connection: StreamConnection
        do {
            connection = try StreamConnection(stream)
        } catch {
            return "\(error)"
        }
        // No media for `timeout` from the start (srtsrc's connecting may take seconds of it): the
        // watch says so among the connection's own events.
        let lastMedia = Mutex(ContinuousClock.now)
        let watch = Task { [timeout, stream] in
            while (try? await Task.sleep(until: lastMedia.withLock({ $0 }) + timeout, clock: .continuous)) != nil {
                if ContinuousClock.now - lastMedia.withLock({ $0 }) >= timeout {
                    // srtsrc says nothing of a passphrase the listener refused: the stream only stays quiet.
                    let hint = stream.kind == .srt ? " (is it sending, with the same passphrase?)" : ""
                    return connection.report(.failed("no media from the \(stream.kind.rawValue) stream within \(timeout.components.seconds) s\(hint)"))
                }
            }
        }
        guard await connection.start() else {
            watch.cancel()
            await connection.stop()
            return "cannot connect to the \(stream.kind.rawValue) stream"
        }
        var ending: String?
        reading: for await event in connection.events {
            switch event {
            case .media(let seconds, let bytes):
                lastMedia.withLock { $0 = .now }
                media(seconds, bytes)
            case .failed(let text):
                ending = text
                break reading
            case .ended:
                ending = "the server ended the stream"
                break reading
            }
        }
        watch.cancel()
        await connection.stop()
        return Task.isCancelled ? nil : ending
    }
}

/// Why a load test cannot start: one line, naming the fix.
public struct LoadInputError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
