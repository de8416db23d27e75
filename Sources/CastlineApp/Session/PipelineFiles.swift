import CastlineKit
import Foundation
import StagePlugins

/// Loading and checking pipeline files the same way for every subcommand.
public enum PipelineFiles {
    public static let registry = ComponentRegistry.builtin

    /// The stages of `spec` that measure their streams (stats), in pipeline order, by the names
    /// their samples carry: the outermost (last) speaks for the pipeline.
    static func measuringStages(of spec: PipelineSpec) -> [String] {
        spec.stages.enumerated().compactMap { index, stage in
            registry.stages.contains { $0.kind == stage.kind && $0.measuresStreams } ? stage.stageName(at: index) : nil
        }
    }

    /// Loads, validates and plans (makes every component); errors come back as printable lines.
    /// `checkOnly` (validate, print, graph: nothing runs): a secret's unset `${VAR}` is noted, not an error.
    public static func load(_ path: String, overrides: [String] = [], checkOnly: Bool = false) -> Result<PipelinePlan, LoadFailure> {
        spec(path, overrides: overrides, checkOnly: checkOnly).flatMap { plan($0, origin: path) }
    }

    /// What a command builds from its flags: the pipeline, its secrets read from the environment
    /// (an unset one deferred when `deferringUnsetSecrets`, as `checkOnly` asks).
    public typealias BuildSpec = (_ environment: [String: String], _ deferringUnsetSecrets: Bool) throws(ConfigError) -> PipelineSpec

    /// The same for a pipeline a command built from its flags (`listen`, `broadcast`): checked and
    /// completed as a file's is (`PipelineSpec.completed`), then planned.
    public static func load(origin: String, checkOnly: Bool = false, _ build: BuildSpec) -> Result<PipelinePlan, LoadFailure> {
        let built: PipelineSpec
        do {
            built = try build(ProcessInfo.processInfo.environment, checkOnly)
        } catch {
            var located = error
            located.file = origin
            return .failure(LoadFailure(lines: [located.description]))
        }
        return loaded { () throws(ConfigErrors) in try built.completed(catalog: registry, origin: origin) }
            .flatMap { plan($0, origin: origin) }
    }

    /// Every key a listener takes, for `listen --help`: the fixed ones, then each stage command's.
    public static var keyHelp: String {
        let commands = registry.commands.map { command in
            let keys = command.keys.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                .map { "\($0.key) (\($0.value > 0 ? "+" : "")\($0.value))" }.joined(separator: ", ")
            return "\(command.name) steps: \(keys)"
        }
        return (["space pauses and resumes (with a delay stage, as a time-shift), q quits"] + commands).joined(separator: "; ")
    }

    /// `castline validate`: `FILE: ok` on stdout for each good file, the errors of each bad one on stderr;
    /// true when every file is good.
    public static func check(_ files: [String], overrides: [String]) -> Bool {
        var good = true
        for file in files {
            switch load(file, overrides: overrides, checkOnly: true) {
            case .success(let plan) where plan.spec.neededAtRunTime.isEmpty: print("\(file): ok")
            case .success(let plan): print("\(file): ok (needs \(plan.spec.neededAtRunTime.joined(separator: ", ")) at run time)")
            case .failure(let failure):
                failure.report()
                good = false
            }
        }
        return good
    }

    /// Loads and validates a pipeline file, without making its components (a reload plans into the running pipeline).
    static func spec(_ path: String, overrides: [String] = [], checkOnly: Bool = false) -> Result<PipelineSpec, LoadFailure> {
        loaded { () throws(ConfigErrors) in try loader(checkOnly).load(contentsOf: path, overrides: overrides) }
    }

    /// The same for pipeline YAML that did not come from a file (a control API request);
    /// `origin` names it in errors, and names the pipeline when the text does not.
    static func spec(yaml: String, origin: String, checkOnly: Bool = false) -> Result<PipelineSpec, LoadFailure> {
        loaded { () throws(ConfigErrors) in try loader(checkOnly).load(yaml: yaml, file: origin) }
    }

    /// An alarms stage's options from a file of their own (`monitor --alarms FILE`), checked as
    /// the same map in a pipeline file is.
    public static func alarmOptions(_ path: String) -> Result<OptionValues, LoadFailure> {
        do {
            return .success(try loader(false).loadOptions(contentsOf: path, schema: AlarmsStage.schema, owner: AlarmsStage.kind))
        } catch {
            return .failure(LoadFailure(lines: error.errors.map(\.description)))
        }
    }

    private static func loader(_ checkOnly: Bool) -> PipelineLoader {
        var loader = PipelineLoader(catalog: registry)
        loader.defersUnsetSecrets = checkOnly
        return loader
    }

    /// Makes every component of `spec`.
    static func plan(_ spec: PipelineSpec, origin: String) -> Result<PipelinePlan, LoadFailure> {
        do {
            return .success(try registry.plan(spec))
        } catch {
            return .failure(LoadFailure(lines: [SecretMasker(secrets: spec.allSecrets).mask(spec.errorLine(error, origin: origin))]))
        }
    }

    private static func loaded(_ load: () throws(ConfigErrors) -> PipelineSpec) -> Result<PipelineSpec, LoadFailure> {
        do {
            return .success(try load())
        } catch {
            return .failure(LoadFailure(lines: error.errors.map(\.description)))
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
    /// What was loaded, or the errors printed and the process ended with the bad-input status.
    public func orExit() -> Success {
        switch self {
        case .success(let loaded):
            return loaded
        case .failure(let failure):
            failure.report()
            exit(ExitStatus.badInput)
        }
    }
}
