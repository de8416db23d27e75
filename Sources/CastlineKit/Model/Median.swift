extension Collection where Element == Double {
    /// The middle value (the mean of the two middle ones for an even count); nil when empty.
    public var median: Double? {
        guard !isEmpty else { return nil }
        let sorted = sorted()
        return (sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2
    }
}
