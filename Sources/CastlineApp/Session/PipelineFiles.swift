import CastlineKit
import Foundation
import StagePlugins

/// Loading and checking pipeline files the same way for every subcommand.
public enum PipelineFiles {
    public static let registry = ComponentRegistry.builtin

    /// Loads, validates and makes every component; errors come back as printable lines.
    public static func load(_ path: String, overrides: [String] = []) -> Result<PipelinePlan, LoadFailure> {
        plan(path) { () throws(ConfigErrors) in
            try PipelineLoader(catalog: registry).load(contentsOf: path, overrides: overrides)
        }
    }

    /// The same for a spec that a command built from its flags (`document` is JSON, which YAML reads).
    public static func load(document: [String: Any], origin: String, overrides: [String] = []) -> Result<PipelinePlan, LoadFailure> {
        let text: String
        do {
            let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
            text = String(decoding: data, as: UTF8.self)
        } catch {
            return .failure(LoadFailure(lines: ["\(origin): \(error)"]))
        }
        return plan(origin) { () throws(ConfigErrors) in
            try PipelineLoader(catalog: registry).load(yaml: text, file: origin, overrides: overrides)
        }
    }

    /// The same for pipeline YAML that did not come from a file (a control API request);
    /// `origin` names it in errors, and names the pipeline when the text does not.
    public static func load(yaml: String, origin: String, overrides: [String] = []) -> Result<PipelinePlan, LoadFailure> {
        plan(origin) { () throws(ConfigErrors) in
            try PipelineLoader(catalog: registry).load(yaml: yaml, file: origin, overrides: overrides)
        }
    }

    private static func plan(_ origin: String, _ load: () throws(ConfigErrors) -> PipelineSpec) -> Result<PipelinePlan, LoadFailure> {
        let spec: PipelineSpec
        do {
            spec = try load()
        } catch {
            return .failure(LoadFailure(lines: error.errors.map(\.description)))
        }
        let path = origin
        do {
            return .success(try GraphBuilder(registry: registry).plan(spec))
        } catch {
            return .failure(LoadFailure(lines: ["\(path): \(SecretMasker(secrets: spec.allSecrets).mask("\(error)"))"]))
        }
    }

    public struct LoadFailure: Error {
        public let lines: [String]

        public func report() {
            for line in lines { Terminal.status(line) }
        }
    }
}

extension Result where Failure == PipelineFiles.LoadFailure {
    /// The plan, or the errors printed and the process ended with the bad-input status.
    public func orExit() -> Success {
        switch self {
        case .success(let plan):
            return plan
        case .failure(let failure):
            failure.report()
            exit(ExitStatus.badInput)
        }
    }
}
