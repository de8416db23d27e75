import ArgumentParser
import CastlineApp

/// Where an ingest's stream keys come from, and the CA an rtmps ingest is trusted by: shared by
/// `broadcast` and `latency`.
struct IngestKeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Read the stream key from this environment variable (once, or once per RTMP URL).", valueName: "VAR"))
    var keyEnv: [String] = []
    @Option(help: ArgumentHelp("Read the stream key from this file (once, or once per RTMP URL).", valueName: "path"))
    var keyFile: [String] = []
    @Option(help: ArgumentHelp("rtmps: trust the CAs in this PEM file (e.g. the one `castline ingest` prints); with rtmp:// destinations too, it applies to the rtmps:// ones.", valueName: "path"))
    var caFile: String?

    var isEmpty: Bool { keyEnv.isEmpty && keyFile.isEmpty }

    /// These keys and CA on `shortcut`.
    func apply(to shortcut: inout BroadcastShortcut) {
        (shortcut.keyEnvs, shortcut.keyFiles, shortcut.caFile) = (keyEnv, keyFile, caFile)
    }
}
