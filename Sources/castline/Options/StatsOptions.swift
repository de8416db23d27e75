import ArgumentParser
import CastlineApp

/// Where a run's stats go, besides the status line: shared by `run`, `listen` and `broadcast`.
struct StatsOptions: ParsableArguments {
    @Option(name: .customLong("stats-json"),
            help: ArgumentHelp("Write every event as a JSON line to FILE, or to stdout with -.", valueName: "FILE|-"))
    var json: String?
    @Option(name: .customLong("metrics"),
            help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts, e.g. 127.0.0.1:9464.",
                               valueName: "HOST:PORT"))
    var metrics: String?
    @Option(name: .customLong("stats-plot"),
            help: ArgumentHelp("At the end, draw bitrate and audio level over the run into this SVG file.", valueName: "FILE.svg"))
    var plot: String?

    var settings: StatsSettings { StatsSettings(json: json, metrics: metrics, plot: plot) }

    func validate() throws { try checked { () throws(SettingsError) in try settings.validate() } }
}

/// A settings error as argument-parser reports a bad flag (usage, exit 2).
func checked<T>(_ body: () throws(SettingsError) -> T) throws(ValidationError) -> T {
    do { return try body() } catch { throw ValidationError(error.description) }
}
