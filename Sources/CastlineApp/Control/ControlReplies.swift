import Foundation
import Hummingbird

/// Replies of the control API: JSON objects (errors as `{"error": "..."}`),
/// YAML and plain text.
enum ControlReply {
    static func json(_ object: [String: Any], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data(#"{"error":"the reply could not be written as JSON"}"#.utf8)
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        var buffer = ByteBuffer(bytes: data)
        buffer.writeString("\n")
        return Response(status: status, headers: fields, body: .init(byteBuffer: buffer))
    }

    /// `{"error": message}`, plus `errors` (one line per problem) when there are several lines to tell.
    static func error(_ status: HTTPResponse.Status, _ message: String, lines: [String] = [], headers: HTTPFields = [:]) -> Response {
        var object: [String: Any] = ["error": message]
        if !lines.isEmpty { object["errors"] = lines }
        return json(object, status: status, headers: headers)
    }

    static func text(_ text: String, contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A request the routes turned down: becomes a JSON error reply.
struct ControlRefusal: Error {
    let status: HTTPResponse.Status
    let message: String
    var lines: [String] = []

    var response: Response { ControlReply.error(status, message, lines: lines) }
}
