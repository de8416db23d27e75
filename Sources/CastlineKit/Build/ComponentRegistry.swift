import PipelineConfig

/// Every kind a pipeline file can name. Sources and sinks are castline's own;
/// stages come from the plugin list the executable passes in.
public struct ComponentRegistry: ComponentCatalog, @unchecked Sendable {
    // Metatypes of these protocols are immutable descriptions: safe to share.
    public let sources: [any SourceComponent.Type]
    public let stages: [any Stage.Type]
    public let sinks: [any SinkComponent.Type]
    /// Every command a registered stage takes (see `StageCommand`).
    public let commands: [StageCommand]

    public init(stages: [any Stage.Type]) {
        sources = [TestSource.self, FileSource.self, URISource.self, HLSSource.self, CaptureSource.self, WHEPSource.self]
        sinks = [NullSink.self, FileSink.self, AudioSink.self, VideoSink.self, RTMPSink.self, SRTSink.self, WHIPSink.self]
        self.stages = stages
        commands = stages.compactMap { $0 as? any ControllableStage.Type }.flatMap { $0.commands }
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

    /// Every figure a registered component declares.
    public var figures: [Figure] {
        ComponentRole.allCases.flatMap { descriptions(for: $0) }.flatMap { $0.figures }
    }

    public func kinds(for role: ComponentRole) -> [String] {
        descriptions(for: role).map { $0.kind }.sorted()
    }

    /// Makes every component, once, which checks what the schema cannot (paths, URIs,
    /// descriptions). `channel` is where they will report: a new one for a new run,
    /// the running one's for a swap (`PipelineRunner.channel`).
    public func plan(_ spec: PipelineSpec, channel: RunChannel? = nil) throws -> PipelinePlan {
        Gst.initialize()
        let newRun = channel == nil
        let channel = channel ?? RunChannel(pipeline: spec.name, secrets: spec.allSecrets)
        for secret in spec.allSecrets { channel.masker.add(secret) }
        // A swap's plan is told once it is applied (`PipelineRunner.swap`): one refused changes nothing.
        if newRun {
            channel.destinations.store(spec.sinks.filter { sink in self.sinks.first { $0.kind == sink.kind }?.isDestination ?? false }.count,
                                       ordering: .relaxed)
        }
        func context(_ spec: PipelineSpec, _ component: ComponentSpec, name: String) -> ComponentContext {
            ComponentContext(pipelineName: spec.name, componentName: name, keyPath: component.keyPath,
                             events: channel.emitter, connection: { channel.connection($0, from: component.keyPath) },
                             destinations: { channel.destinations.load(ordering: .relaxed) }, playoutHold: channel.playoutHold)
        }
        let source = try located(spec.source.keyPath) {
            try self.source(spec.source, context: context(spec, spec.source, name: "source"))
        }
        let stages = try spec.stages.enumerated().map { index, stageSpec in
            let name = stageSpec.stageName(at: index)
            let stage = try located(stageSpec.keyPath) {
                try self.stage(stageSpec, context: context(spec, stageSpec, name: name))
            }
            return PipelinePlan.Part<any Stage>(spec: stageSpec, component: stage, binName: "stage-\(name)")
        }
        let sinks = try spec.sinks.enumerated().map { index, sinkSpec in
            let name = sinkSpec.name ?? "\(sinkSpec.kind)\(index)"
            let sink = try located(sinkSpec.keyPath) {
                try self.sink(sinkSpec, context: context(spec, sinkSpec, name: name))
            }
            return PipelinePlan.Part<any SinkComponent>(spec: sinkSpec, component: sink, binName: "sink-\(name)")
        }
        return PipelinePlan(
            spec: spec, channel: channel,
            source: .init(spec: spec.source, component: source, binName: "source-\(spec.source.kind)"),
            stages: stages, sinks: sinks)
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

extension ComponentSpec {
    /// A stage's name in events and samples: its `name:`, or its kind and its index in `stages:`.
    public func stageName(at index: Int) -> String { name ?? "\(kind)\(index)" }
}
