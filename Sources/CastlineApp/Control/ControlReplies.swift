import CastlineKit
import Foundation
import Hummingbird

/// A request the API turned down: `{"error": message}`, plus `errors` (one line
/// per problem) when there are several lines to tell.
struct ControlRefusal: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    var lines: [String] = []
    var headers: HTTPFields = [:]

    struct Body: Encodable {
        let error: String
        let errors: [String]?
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        ControlReply.json(Body(error: message, errors: lines.isEmpty ? nil : lines), status: status, headers: headers)
    }
}

/// Replies as bytes: JSON (keys sorted, a line end after it, as a terminal user expects), YAML and plain text.
enum ControlReply {
    static func json(_ reply: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(reply)) ?? Data(#"{"error":"the reply could not be written as JSON"}"#.utf8)
        var buffer = ByteBuffer(bytes: data)
        buffer.writeString("\n")
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: buffer))
    }

    static func text(_ text: String, contentType: String) -> Response {
        Response(status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// `GET /status` for one pipeline: its state, position, the figures its stages'
/// commands move (`delay_s`, `gain_db`; null until reported) and its latest stats.
struct PipelineStatus: Encodable {
    let pipeline: String
    let state: RunState
    let position: Double?
    let commandFigures: [String: Double?]
    let stats: [LatestFigures.Entry]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FigureKey.self)
        try container.encode(pipeline, forKey: FigureKey("pipeline"))
        try container.encode(state.rawValue, forKey: FigureKey("state"))
        try container.encode(position, forKey: FigureKey("position_s"))
        for (figure, value) in commandFigures { try container.encode(value, forKey: FigureKey(figure)) }
        try container.encode(stats, forKey: FigureKey("stats"))
    }
}

/// Several pipelines' status: `{"pipelines": [...]}`.
struct PipelinesStatus: Encodable {
    let pipelines: [PipelineStatus]
}

/// `POST /swap`, applied.
struct SwapReply: Encodable {
    let pipeline: String
    let changes: [String]
    let tookMilliseconds: Int

    enum CodingKeys: String, CodingKey {
        case pipeline, changes
        case tookMilliseconds = "took_ms"
    }
}

/// A JSON key named at run time (a figure's name).
struct FigureKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension LatestFigures.Entry: Encodable {
    /// The keys of a `stats` JSON line without `event` and `pipeline`: `ts`, `stage`, `stream` and the figures.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FigureKey.self)
        try container.encode(EventJSON.timestamp(time), forKey: FigureKey("ts"))
        try container.encode(sample.stage, forKey: FigureKey("stage"))
        try container.encode(sample.stream?.rawValue, forKey: FigureKey("stream"))
        for (figure, value) in sample.figures where value.isFinite && !EventJSON.reserved.contains(figure) {
            try container.encode(value, forKey: FigureKey(figure))
        }
    }
}

/// A stage command as `GET /commands` lists it: what the page needs to draw its control.
struct CommandDeclaration: Encodable {
    let name: String
    let summary: String
    /// `{"<field>": value}` sets it; `{"step": N}` moves it.
    let field: String
    let min: Double
    let max: Double
    /// The figures it moves, first the one it sets.
    let figures: [String]
    let pipelines: [String]

    init(_ command: StageCommand, pipelines: [String]) {
        name = command.name
        summary = command.summary
        field = command.valueField
        min = command.range.lowerBound
        max = command.range.upperBound
        figures = command.figures
        self.pipelines = pipelines
    }
}
