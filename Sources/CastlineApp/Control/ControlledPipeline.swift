import CastlineKit
import Foundation

/// One running pipeline as the control API, the file watcher and the run
/// session share it: its runner, the hub its events go through, and the file
/// it came from (with the `--set` overrides to apply again on a reload).
final class ControlledPipeline: Sendable {
    let runner: PipelineRunner
    let hub = EventHub(commands: PipelineFiles.registry.commands)
    let file: String?
    let overrides: [String]

    init(runner: PipelineRunner, spec: PipelineSpec, file: String?, overrides: [String]) {
        self.runner = runner
        self.file = file
        self.overrides = overrides
        hub.setMeasuringStages(PipelineFiles.measuringStages(of: spec))
    }

    var name: String { runner.name }

    /// Applies a loaded pipeline file, or reports why not, exactly as `--watch`
    /// does: a file that did not load is refused with its errors (the running
    /// pipeline stays untouched); one that did is handed to the runner's swap,
    /// which reports `reloaded` or `reload-failed` itself.
    func apply(_ loaded: Result<PipelineSpec, PipelineFiles.LoadFailure>, origin: String) async -> Result<SwapReport, SwapRefused> {
        switch loaded {
        case .failure(let failure):
            await runner.refuseReload(origin: origin, errors: failure.lines)
            return .failure(SwapRefused(lines: failure.lines))
        case .success(let spec):
            do throws(SwapRefused) {
                let report = try await runner.swap(to: spec, registry: PipelineFiles.registry, origin: origin)
                hub.setMeasuringStages(PipelineFiles.measuringStages(of: spec))
                return .success(report)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Loads this pipeline's file again and applies it (`--watch`, SIGHUP).
    func reloadFile() async {
        guard let file else { return }
        _ = await apply(PipelineFiles.spec(file, overrides: overrides), origin: file)
    }

    /// True when the running pipeline has a stage that takes `command` (`delay`, `gain`).
    func hasStage(taking command: String) async -> Bool {
        let kinds = Set(await runner.spec.stages.map(\.kind))
        return PipelineFiles.registry.stages.contains { type in
            kinds.contains(type.kind) && ((type as? any ControllableStage.Type)?.commands.contains { $0.name == command } ?? false)
        }
    }

    /// True when the running pipeline has a stage that measures its streams (see `Stage.measuresStreams`).
    func measuresStreams() async -> Bool {
        let kinds = Set(await runner.spec.stages.map(\.kind))
        return PipelineFiles.registry.stages.contains { kinds.contains($0.kind) && $0.measuresStreams }
    }
}
