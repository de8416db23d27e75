import CastlineKit
import Foundation
import StagePlugins

/// Loading and checking pipeline files the same way for every subcommand.
enum PipelineFiles {
    static let registry = ComponentRegistry.builtin

    /// Loads, validates and makes every component; errors come back as printable lines.
    static func load(_ path: String, overrides: [String] = []) -> Result<PipelinePlan, LoadFailure> {
        let spec: PipelineSpec
        do {
            spec = try PipelineLoader(catalog: registry).load(contentsOf: path, overrides: overrides)
        } catch {
            return .failure(LoadFailure(lines: error.errors.map(\.description)))
        }
        do {
            return .success(try GraphBuilder(registry: registry).plan(spec))
        } catch {
            return .failure(LoadFailure(lines: ["\(path): \(SecretMasker(secrets: spec.allSecrets).mask("\(error)"))"]))
        }
    }

    struct LoadFailure: Error {
        let lines: [String]

        func report() {
            for line in lines { Terminal.status(line) }
        }
    }
}

extension Result where Failure == PipelineFiles.LoadFailure {
    /// The plan, or the errors printed and the process ended with the bad-input status.
    func orExit() -> Success {
        switch self {
        case .success(let plan):
            return plan
        case .failure(let failure):
            failure.report()
            exit(ExitStatus.badInput)
        }
    }
}
