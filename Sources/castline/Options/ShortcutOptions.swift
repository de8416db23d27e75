import ArgumentParser
import CastlineKit

/// What `broadcast`, `listen` and `monitor` share: they build a pipeline from flags, which
/// may be printed instead of run, and may stop after a length of media.
struct ShortcutOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("Stop cleanly after this much media, e.g. 30s (monitor: this long on the wall clock, a stalled stream's time included).", valueName: "duration"))
    var duration: Duration?
    @Flag(help: "Print the pipeline file these flags make, and exit.")
    var printPipeline = false

    func validate() throws {
        try duration?.requireAbove0("--duration", example: "30s")
    }
}
