import PipelineConfig

/// Untyped reads of a loaded file's values, for the loader's tests only: components read
/// through their `ConfigOption` declarations, so the library has none.
extension OptionValues {
    func string(_ name: String) -> String? {
        if case .string(let v) = self[name] { return v }
        return nil
    }
    func int(_ name: String) -> Int? {
        if case .int(let v) = self[name] { return v }
        return nil
    }
    /// Also accepts an `.int` value.
    func double(_ name: String) -> Double? {
        switch self[name] {
        case .double(let v): v
        case .int(let v): Double(v)
        default: nil
        }
    }
    func bool(_ name: String) -> Bool? {
        if case .bool(let v) = self[name] { return v }
        return nil
    }
    func duration(_ name: String) -> Duration? {
        if case .duration(let v) = self[name] { return v }
        return nil
    }
    func bitrate(_ name: String) -> Bitrate? {
        if case .bitrate(let v) = self[name] { return v }
        return nil
    }
    func secret(_ name: String) -> Secret? {
        if case .secret(let v) = self[name] { return v }
        return nil
    }
    func object(_ name: String) -> OptionValues? {
        if case .object(let v) = self[name] { return v }
        return nil
    }
}
