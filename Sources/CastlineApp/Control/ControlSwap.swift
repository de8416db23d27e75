import CastlineKit
import Foundation
import Hummingbird

/// `POST /swap`: a new pipeline file for a running pipeline, checked exactly
/// as `--watch` checks a changed file, then handed to the runner's swap.
///
/// The body is either `{"path": "FILE"}` (read by castline, relative to its
/// working folder) or the YAML itself (`Content-Type: application/yaml` or
/// `text/yaml`, or any body that is not JSON). `?origin=NAME.yaml` names YAML
/// text in errors, and names the pipeline when the text has no `name:`.
struct ControlSwap {
    let pipelines: [ControlledPipeline]

    /// Where the new pipeline comes from.
    enum Source {
        case path(String)
        case yaml(String)
    }

    func swap(_ request: Request, body: Data) async throws -> Response {
        let source = try Self.source(body: body, contentType: request.headers[.contentType])
        let loaded: Result<PipelineSpec, PipelineFiles.LoadFailure>
        let origin: String
        switch source {
        case .path(let path):
            origin = path
            loaded = PipelineFiles.spec(path)
        case .yaml(let text):
            origin = request.uri.queryParameters["origin"].map(String.init) ?? "POST /swap"
            loaded = PipelineFiles.spec(yaml: text, origin: origin)
        }
        let target = try target(request, loaded: loaded)
        // The running file as GET /pipeline (and the page) shows it, sent back unchanged, would publish with "****".
        if case .success(let spec) = loaded, spec.allSecrets.contains(where: \.isMasked) {
            throw ControlRefusal(status: .unprocessableContent, message: "\(origin) not applied; pipeline \"\(target.name)\" runs on unchanged",
                                 lines: ["\(origin): a secret in it is \(Secret.masked), as castline shows secrets: write the value, or ${VAR} to read it from the environment"])
        }
        switch await target.apply(loaded, origin: origin) {
        case .success(let report):
            return ControlReply.json(SwapReply(pipeline: target.name, changes: report.changes,
                                               tookMilliseconds: Int((report.took.seconds * 1000).rounded())))
        case .failure(let refused):
            throw ControlRefusal(status: .unprocessableContent,
                                 message: "\(origin) not applied; pipeline \"\(target.name)\" runs on unchanged",
                                 lines: refused.lines)
        }
    }

    /// The pipeline to swap: the one `?pipeline=` names, the only one, or the
    /// one whose name the new file carries.
    private func target(_ request: Request, loaded: Result<PipelineSpec, PipelineFiles.LoadFailure>) throws -> ControlledPipeline {
        if let name = request.uri.queryParameters["pipeline"].map(String.init) {
            guard let named = pipelines.first(where: { $0.name == name }) else {
                throw ControlRefusal(status: .notFound, message: "no pipeline \"\(name)\"")
            }
            return named
        }
        if pipelines.count == 1, let only = pipelines.first { return only }
        if case .success(let spec) = loaded, let named = pipelines.first(where: { $0.name == spec.name }) {
            return named
        }
        throw ControlRefusal(status: .badRequest, message: """
            several pipelines run (\(pipelines.map(\.name).joined(separator: ", "))): choose one with ?pipeline=NAME
            """)
    }

    static func source(body: Data, contentType: String?) throws -> Source {
        let type = contentType?.lowercased() ?? ""
        let text = String(decoding: body, as: UTF8.self)
        if type.contains("yaml") { return .yaml(text) }
        let declaredJSON = type.contains("json")
        guard let json = try? JSONSerialization.jsonObject(with: body) else {
            if declaredJSON {
                throw ControlRefusal(status: .badRequest, message: #"the body is not JSON (send {"path": "FILE"}, or the YAML with Content-Type: application/yaml)"#)
            }
            return .yaml(text)
        }
        if let object = json as? [String: Any], let path = object["path"] {
            guard let path = path as? String, !path.isEmpty, object.count == 1 else {
                throw ControlRefusal(status: .badRequest, message: #"send {"path": "FILE"} with the path of a pipeline file, and nothing else"#)
            }
            // Only a pipeline file: castline reads the path, and its errors about a file that is
            // not one would show its first line to whoever may call the API (a key file's key).
            guard [".yaml", ".yml"].contains(where: path.lowercased().hasSuffix) else {
                throw ControlRefusal(status: .badRequest, message: "\(path) is not a pipeline file: send the path of a .yaml or .yml file")
            }
            return .path(path)
        }
        if declaredJSON {
            throw ControlRefusal(status: .badRequest, message: #"a JSON body is {"path": "FILE"}; send a pipeline itself as YAML (Content-Type: application/yaml)"#)
        }
        // YAML reads JSON: a pipeline written as JSON is a pipeline all the same.
        return .yaml(text)
    }
}
