/// A URI's scheme, lowercased ("rtmp" of "RTMP://host/app"), read without parsing the rest:
/// what decides which source or sink takes it.
public func uriScheme(_ uri: String) -> String {
    uri.prefix(while: { $0 != ":" }).lowercased()
}

/// Refuses a URL whose port is outside 1 to 65535, which the network elements would take as
/// another port (rtmp2sink wraps 99999 to its default 1935) or fail on with no word of why.
/// Not quoted: a URL may carry a key.
func requireValidPort(_ port: Int?, at keyPath: String) throws {
    guard let port, !(1...65_535).contains(port) else { return }
    throw BuildError("the URL's port \(port) is out of range (use 1 to 65535)", at: keyPath)
}
