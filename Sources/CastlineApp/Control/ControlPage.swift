import Foundation
import Hummingbird

/// The page at `/` of `--control` (the files in Control/Page, compiled in by the EmbedPage
/// plugin). Served without the token: the page asks for it and sends it on its API calls.
enum ControlPage {
    struct File: Sendable {
        let contentType: String
        let body: ByteBuffer
    }

    static let files: [String: File] = PageFiles.base64.reduce(into: [:]) { files, entry in
        guard let data = Data(base64Encoded: entry.value) else { return }
        files[entry.key] = File(contentType: contentType(of: entry.key), body: ByteBuffer(bytes: data))
    }

    static func add(to router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in try response("index.html") }
        for name in files.keys where name != "index.html" {
            router.get(RouterPath(stringLiteral: name)) { _, _ in try response(name) }
        }
    }

    private static func response(_ name: String) throws -> Response {
        guard let file = files[name] else { throw ControlRefusal(status: .notFound, message: "no page file \(name)") }
        return Response(status: .ok, headers: [
            .contentType: file.contentType, .cacheControl: "no-cache", FieldName.contentTypeOptions: "nosniff",
            // Its own files only, never framed by another site.
            FieldName.contentSecurityPolicy: "default-src 'self'; img-src 'self' blob: data:; frame-ancestors 'none'",
        ], body: .init(byteBuffer: file.body))
    }

    private static func contentType(of name: String) -> String {
        switch URL(fileURLWithPath: name).pathExtension {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        default: "application/octet-stream"
        }
    }
}

/// No request from another site: a browser names the page that sends a request in `Origin`
/// (and `Sec-Fetch-Site`), and only this server's own page may call it. On a loopback bind
/// the `Host` must be a loopback name too, so a site whose name is made to resolve to
/// 127.0.0.1 (DNS rebinding) is not "same origin" either.
struct SameOrigin: RouterMiddleware {
    typealias Context = BasicRequestContext
    let loopback: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority ?? ""
        if loopback, !Self.isLoopback(host: host) {
            throw ControlRefusal(status: .forbidden, message: "Host \"\(host)\" is not this machine: use http://127.0.0.1:PORT/")
        }
        if let origin = request.headers[.origin], origin != "http://\(host)" {
            throw ControlRefusal(status: .forbidden, message: "requests from another origin (\(origin)) are not accepted")
        }
        if request.headers[FieldName.fetchSite] == "cross-site" {
            throw ControlRefusal(status: .forbidden, message: "requests from another site are not accepted")
        }
        return try await next(request, context)
    }

    /// `127.0.0.1:7070`, `localhost:7070`, `[::1]:7070` (a port or not).
    static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") {
            name = String(name.dropFirst().prefix { $0 != "]" })
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return Endpoint("[\(name)]:1")?.isLoopback ?? false
    }
}

/// Header names HTTPTypes does not name.
enum FieldName {
    typealias Name = HTTPFields.Element.Name
    static let contentTypeOptions = Name("X-Content-Type-Options") ?? .contentType
    static let contentSecurityPolicy = Name("Content-Security-Policy") ?? .contentType
    static let fetchSite = Name("Sec-Fetch-Site") ?? .contentType
}
