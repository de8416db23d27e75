/// A URI's scheme, lowercased ("rtmp" of "RTMP://host/app"), read without parsing the rest:
/// what decides which source or sink takes it.
public func uriScheme(_ uri: String) -> String {
    uri.prefix(while: { $0 != ":" }).lowercased()
}
