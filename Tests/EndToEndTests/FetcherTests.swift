import Foundation
@testable import HTTPClient
import LocalIngest
import Testing

/// castline's two HTTP clients (NIO's event loops for HLS; URLSession for the rest, and for HLS
/// through a proxy) against a server that misbehaves on purpose: each says the same thing of the same trouble.
@Suite("HTTPFetcher and EventLoopFetcher: one behaviour", .serialized, .timeLimit(.minutes(1)))
struct FetcherTests {
    typealias Origin = HLSBadInputTests.HostileServer

    static let fetchers: [@Sendable () -> any HTTPGetting] = [
        { HTTPFetcher(idleTimeout: .seconds(1)) },
        { EventLoopFetcher(idleTimeout: .seconds(1)) },
    ]

    /// The error a fetch of `url` ends with; nil when it succeeds.
    static func failure(_ fetcher: any HTTPGetting, _ url: URL) async -> FetchError? {
        do { _ = try await fetcher.data(url) } catch { return error }
        return nil
    }

    @Test("a range the server ignores (200, whole body) cut to its bytes; 404, a redirect loop, silence, nothing listening: one error each",
          arguments: 0..<2)
    func sameAnswers(_ which: Int) async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        let fetcher = Self.fetchers[which]()
        func url(_ path: String) throws -> URL { try #require(URL(string: origin.url(path))) }
        func error(_ path: String) async throws -> FetchError? { await Self.failure(fetcher, try url(path)) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: scratch.file("tone.ts")))
        let part = try await fetcher.data(try url("seg/1.ts"), range: ByteRange(offset: 188 * 3, length: 1000))
        #expect(part == whole[(188 * 3)..<(188 * 3 + 1000)], "\(part.count) bytes")
        #expect(try await fetcher.data(try url("seg/2.ts")) == whole)

        #expect(try await error("nothing-here.ts") == .http(status: 404, url: origin.url("nothing-here.ts")))
        let loop = try await error("redirect-loop.m3u8")
        #expect(loop == .tooManyRedirects(url: origin.url("redirect-loop.m3u8"), limit: HTTPFetcher.maxRedirects), "\(String(describing: loop))")
        let began = ContinuousClock.now
        #expect(try await error("silent.m3u8") == .timedOut(url: origin.url("silent.m3u8"), after: .seconds(1)))
        #expect(ContinuousClock.now - began < .seconds(3))
        let closed = "http://127.0.0.1:\(try FreePort.find())/live.m3u8"
        do {
            _ = try await fetcher.data(try #require(URL(string: closed)))
            Issue.record("a fetch from a port nothing listens on succeeded")
        } catch {
            #expect(error as? FetchError == .refused(url: closed), "\(error)")
        }
    }

    @Test("cookies as a browser keeps them: Max-Age and Expires end them, a host-only one stays on its host, a path on its path, a secure one on TLS")
    func cookieJar() throws {
        var jar = CookieJar()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let site = try #require(URL(string: "http://cdn.example.com/live/a.m3u8"))
        jar.take(["short=1; Max-Age=60", "wide=2; Domain=example.com", "deep=3; Path=/live/hd", "tls=4; Secure",
                  "gone=5; Expires=Thu, 01 Jan 2026 00:00:00 GMT", "other=6; Domain=elsewhere.com", "tld=7; Domain=com"],
                 from: site, now: now)
        #expect(jar.header(for: site, now: now) == "short=1; wide=2")
        #expect(jar.header(for: try #require(URL(string: "https://cdn.example.com/live/hd/1.ts")), now: now) == "short=1; wide=2; deep=3; tls=4")
        #expect(jar.header(for: try #require(URL(string: "http://img.example.com/x")), now: now) == "wide=2")
        #expect(jar.header(for: try #require(URL(string: "http://sub.cdn.example.com/x")), now: now) == "wide=2")
        #expect(jar.header(for: site, now: now.addingTimeInterval(61)) == "wide=2")
        var addresses = CookieJar()
        addresses.take(["a=1; Domain=0.1"], from: try #require(URL(string: "http://10.0.0.1/x")))
        addresses.take(["b=2"], from: try #require(URL(string: "http://10.0.0.1/x")))
        #expect(addresses.header(for: try #require(URL(string: "http://192.168.0.1/x"))) == nil)
        #expect(addresses.header(for: try #require(URL(string: "http://10.0.0.1/y"))) == "b=2")
    }

    @Test("a cookie the playlist's reply set goes with the segment requests (a CDN's token); a gzipped playlist comes decoded",
          arguments: 0..<2)
    func cookiesAndGzip(_ which: Int) async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        let fetcher = Self.fetchers[which]()
        let segment = try #require(URL(string: origin.url("cookie/0.ts")))
        #expect(await Self.failure(fetcher, segment) == .http(status: 403, url: segment.absoluteString))
        // A cookie for a domain this host is not in is not kept.
        _ = try await fetcher.data(try #require(URL(string: origin.url("cookie-elsewhere.m3u8"))))
        #expect(await Self.failure(fetcher, segment) == .http(status: 403, url: segment.absoluteString))
        // Set on a redirect back to the same URL, it is sent when the redirect is followed (by the NIO
        // fetcher, which follows redirects itself: URLSession on Linux leaves such a cookie off the next hop).
        if fetcher is EventLoopFetcher {
            let hopped = try await fetcher.data(try #require(URL(string: origin.url("cookie-hop.m3u8"))))
            #expect(String(decoding: hopped, as: UTF8.self).hasPrefix("#EXTM3U"))
            // Redirects go to the web only, never to a local socket.
            let socket = origin.url("to-socket.m3u8")
            #expect(await Self.failure(fetcher, try #require(URL(string: socket))) == .http(status: 302, url: socket))
        }
        let zipped = try await fetcher.data(try #require(URL(string: origin.url("cookie-gzip.m3u8"))))
        #expect(String(decoding: zipped, as: UTF8.self).hasPrefix("#EXTM3U"), "\(zipped.prefix(16) as NSData)")
        let whole = try Data(contentsOf: URL(fileURLWithPath: scratch.file("tone.ts")))
        #expect(try await fetcher.data(segment) == whole)
    }
}
