import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOPosix
import Synchronization

/// GETs over SwiftNIO's shared event loops (AsyncHTTPClient): a connection pool of its own and
/// no thread of its own. What many simulated players in one process take: on Linux, each
/// URLSession brings its own libcurl handle and Dispatch queues, so a thousand of them spend
/// the machine switching threads and their fetches wait on that. A single player's fetches cost
/// less here too (libcurl's callbacks through an OperationQueue and a timer per transfer are most
/// of what URLSession adds): the HLS client reads through it.
public final class EventLoopFetcher: HTTPGetting {
    /// The HLS sources' fetcher, unless one asks for another timeout.
    public static let shared = EventLoopFetcher()
    /// No byte for this long (connecting, before the headers, or between chunks) ends the fetch.
    public let idleTimeout: Duration
    private let client: HTTPClient
    private let cookies = Mutex(CookieJar())

    public init(idleTimeout: Duration = HTTPFetcher.defaultIdleTimeout) {
        self.idleTimeout = idleTimeout
        let idle = TimeAmount(idleTimeout)
        var configuration = HTTPClient.Configuration(
            // Followed here, hop by hop: each hop's cookies are taken and sent on (a CDN may set its token
            // on a redirect back to the same URL).
            redirectConfiguration: .disallow,
            timeout: .init(connect: idle, read: idle))
        // Bodies the server compressed (a playlist stored gzipped) come as they were, as URLSession gives them.
        configuration.decompression = .enabled(limit: .size(64 << 20))
        // As a player: a few connections to a host, kept open between fetches.
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 6)
        // A refused connection fails its fetch now: retrying is the reader's choice (its backoff, its events).
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.tracing.tracer = nil  // no spans: building them for a no-op tracer is 2 % of a viewer's CPU
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// Its connections close when it goes (an HTTPClient must be shut down, never just dropped).
    deinit { client.shutdown { _ in } }

    public func stream(_ url: URL, range: ByteRange?) -> AsyncThrowingStream<Data, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
        let task = Task { [self, idleTimeout] in
            do {
                var (target, response) = (url, try await get(url, range: range))
                var hops = 0
                while [301, 302, 303, 307, 308].contains(response.status.code),
                      let location = response.headers.first(name: "location"),
                      let next = URL(string: location, relativeTo: target)?.absoluteURL {
                    hops += 1
                    guard hops <= HTTPFetcher.maxRedirects else {
                        throw FetchError.tooManyRedirects(url: url.absoluteString, limit: HTTPFetcher.maxRedirects)
                    }
                    // Only to the web: AsyncHTTPClient would take http+unix:// to a local socket.
                    guard ["http", "https"].contains(next.scheme?.lowercased() ?? "") else {
                        throw FetchError.http(status: Int(response.status.code), url: target.absoluteString)
                    }
                    (target, response) = (next, try await get(next, range: range))
                }
                guard (200..<300).contains(response.status.code) else {
                    throw FetchError.http(status: Int(response.status.code), url: url.absoluteString)
                }
                var cut = range.flatMap { response.status == .ok ? RangeCut($0) : nil }
                for try await buffer in response.body {
                    let chunk = Data(buffer: buffer)
                    guard let (kept, complete) = cut?.cut(chunk) else {
                        continuation.yield(chunk)
                        continue
                    }
                    if !kept.isEmpty { continuation.yield(kept) }
                    if complete { break }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: Self.fetchError(error, url: url, idleTimeout: idleTimeout))
            }
        }
        continuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return stream
    }

    /// One GET, its cookies sent and taken. The deadline is far: the idle timeouts are what end a stuck fetch.
    private func get(_ url: URL, range: ByteRange?) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "User-Agent", value: "castline")
        if let range {
            request.headers.add(name: "Range", value: range.header)
            // A range of a compressed body would be a range of other bytes.
            request.headers.add(name: "Accept-Encoding", value: "identity")
        }
        if let cookie = cookies.withLock({ $0.header(for: url) }) { request.headers.add(name: "Cookie", value: cookie) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .hours(24))
        } catch where Self.isStaleConnection(error) {
            // A kept-open connection the server closed as the request went out (its keep-alive
            // ran out): sent again on a fresh one, as browsers do with a GET; not a failure a player sees.
            response = try await client.execute(request, timeout: .hours(24))
        }
        let set = response.headers["set-cookie"]
        if !set.isEmpty { cookies.withLock { $0.take(set, from: url) } }
        return response
    }

    /// Whether the environment names a proxy, as curl reads them (`http_proxy`, `https_proxy`,
    /// `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`): any of them, since a stream's playlists and
    /// segments may come over either scheme. AsyncHTTPClient reads none; URLSession on Linux reads
    /// them through libcurl, each for its scheme, `no_proxy` included.
    public static func environmentNamesProxy(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains { !(environment[$0] ?? "").isEmpty }
    }

    /// The request went out on a pooled connection the server had closed: nothing was answered.
    static func isStaleConnection(_ error: any Error) -> Bool {
        switch error {
        case let error as ChannelError: error == .ioOnClosedChannel || error == .eof
        case let error as HTTPClientError: error == .remoteConnectionClosed
        default: false
        }
    }

    /// AsyncHTTPClient's and NIO's errors in castline's words, as `HTTPFetcher` reports them.
    static func fetchError(_ error: any Error, url: URL, idleTimeout: Duration) -> FetchError {
        let address = url.absoluteString
        switch error {
        case let error as FetchError: return error
        case is CancellationError: return .cancelled
        case let error as HTTPClientError:
            switch error {
            case .readTimeout, .connectTimeout: return .timedOut(url: address, after: idleTimeout)
            case .cancelled: return .cancelled
            default: return .network("\(error)", url: address)
            }
        case let error as NIOConnectionError where error.connectionErrors.isEmpty && error.dnsAError != nil:
            return .hostNotFound(url: address)
        case let error as NIOConnectionError where !error.connectionErrors.isEmpty || error.dnsAError != nil:
            return .refused(url: address)
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            return .refused(url: address)
        default:
            return .network("\(error)", url: address)
        }
    }
}
