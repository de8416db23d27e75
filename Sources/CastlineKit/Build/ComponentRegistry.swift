import PipelineConfig

/// Every kind a pipeline file can name. Sources and sinks are castline's own;
/// stages come from the plugin list the executable passes in.
public struct ComponentRegistry: ComponentCatalog, @unchecked Sendable {
    // Metatypes of these protocols are immutable descriptions: safe to share.
    public let sources: [any SourceComponent.Type]
    public let stages: [any Stage.Type]
    public let sinks: [any SinkComponent.Type]

    public init(stages: [any Stage.Type]) {
        sources = [TestSource.self, FileSource.self, URISource.self, HLSSource.self]
        sinks = [NullSink.self, FileSink.self, AudioSink.self, RTMPSink.self]
        self.stages = stages
    }

    public func descriptions(for role: ComponentRole) -> [any ComponentDescription.Type] {
        switch role {
        case .source: sources
        case .stage: stages
        case .sink: sinks
        }
    }

    public func schema(for role: ComponentRole, kind: String) -> OptionSchema? {
        descriptions(for: role).first { $0.kind == kind }?.schema
    }

    public func kinds(for role: ComponentRole) -> [String] {
        descriptions(for: role).map { $0.kind }.sorted()
    }

    func source(_ spec: ComponentSpec, context: ComponentContext) throws -> any SourceComponent {
        guard let type = sources.first(where: { $0.kind == spec.kind }) else {
            throw BuildError("unknown source kind \(spec.kind)", at: spec.keyPath)
        }
        return try type.init(spec: spec, context: context)
    }

    func stage(_ spec: ComponentSpec, context: ComponentContext) throws -> any Stage {
        guard let type = stages.first(where: { $0.kind == spec.kind }) else {
            throw BuildError("unknown stage kind \(spec.kind)", at: spec.keyPath)
        }
        return try type.init(spec: spec, context: context)
    }

    func sink(_ spec: ComponentSpec, context: ComponentContext) throws -> any SinkComponent {
        guard let type = sinks.first(where: { $0.kind == spec.kind }) else {
            throw BuildError("unknown sink kind \(spec.kind)", at: spec.keyPath)
        }
        return try type.init(spec: spec, context: context)
    }
}
