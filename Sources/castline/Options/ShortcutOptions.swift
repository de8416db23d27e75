import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation

/// What `broadcast` and `listen` share: they build a pipeline from flags, which
/// may be printed instead of run, and may stop after a length of media.
struct ShortcutOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Stop cleanly after this much media, e.g. 30s.", valueName: "duration"))
    var duration: String?

    @Flag(help: "Print the pipeline file these flags make, and exit.")
    var printPipeline = false

    func validate() throws {
        if let duration, Duration(configText: duration) == nil {
            throw ValidationError("--duration: \"\(duration)\" is not a duration (try 30s)")
        }
    }

    var stopAfter: Duration? { duration.flatMap(Duration.init(configText:)) }

    /// Prints the plan's pipeline file when asked; true when it did (and nothing should run).
    func printedPipeline(_ plan: PipelinePlan) -> Bool {
        guard printPipeline else { return false }
        print(plan.spec.yaml(catalog: PipelineFiles.registry), terminator: "")
        return true
    }
}
