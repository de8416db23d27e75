import GstKit

/// The words for what GStreamer's bus said, as the runner reports a failure.
extension PipelineRunner {
    /// The line for a missing-plugin message that names a decoder
    /// (`type` decoder, `detail` the stream's caps, `name` GStreamer's description).
    static func missingDecoder(in message: Structure) -> String? {
        guard message.string("type") == "decoder", let caps = message.caps("detail") else { return nil }
        return ElementCatalog.missingDecoderMessage(description: message.string("name") ?? "decoder", caps: caps.description)
    }

    /// The last line of GStreamer's debug text is usually the concrete reason.
    static func hint(fromDebug debug: String) -> String? {
        let last = debug.split(separator: "\n").last.map(String.init) ?? debug
        guard let colon = last.range(of: ":", options: .backwards) else { return nil }
        let reason = last[colon.upperBound...].trimmingCharacters(in: .whitespaces)
        return reason.isEmpty || reason.count > 200 ? nil : reason
    }
}
