import Testing
@testable import PipelineConfig

/// A declared option is the schema's field and the component's read at once: the default
/// the schema fills in is the one a read falls back to.
@Suite("Options declared once")
struct OptionTests {
    enum Shape: String, CaseIterable, OptionRepresentable { case round, square }

    static let every = ConfigOption<Duration>("every", default: .seconds(1), help: "how often")
    static let level = ConfigOption<Double>("level", .double(-150...0), default: -60, help: "a level")
    static let device = ConfigOption<String?>("device", help: "a device")
    static let shape = ConfigOption<Shape>("shape", default: .round, help: "a shape")
    static let nested = ConfigOption<OptionValues?>("video", .object(OptionSchema(every)), help: "nested")

    @Test func theSchemaFieldCarriesTheDeclaredDefault() {
        let schema = OptionSchema(Self.every, Self.level, Self.device, Self.shape, Self.nested)
        #expect(schema.field("every")?.defaultValue == .duration(.seconds(1)))
        #expect(schema.field("level")?.type == .double(-150...0))
        #expect(schema.field("level")?.defaultValue == .double(-60))
        #expect(schema.field("device")?.defaultValue == nil)
        #expect(schema.field("shape")?.type == .choice(["round", "square"]))
        #expect(schema.field("shape")?.defaultValue == .string("round"))
        #expect(schema.fields.map(\.name) == ["every", "level", "device", "shape", "video"])
    }

    @Test func aReadFallsBackToTheDeclaredDefault() {
        let none = OptionValues()
        #expect(none[Self.every] == .seconds(1))
        #expect(none[Self.level] == -60)
        #expect(none[Self.device] == nil)
        #expect(none[Self.shape] == .round)
        #expect(none[Self.nested] == nil)
        #expect(!none.isSet(Self.every))
    }

    @Test func aReadTakesWhatTheFileSet() {
        let set = OptionValues(["every": .duration(.milliseconds(250)), "level": .int(-20), "device": .string("hw:0"),
                                "shape": .string("square"), "video": .object(OptionValues(["every": .duration(.seconds(2))]))])
        #expect(set[Self.every] == .milliseconds(250))
        #expect(set[Self.level] == -20)  // a whole number where a double is asked for
        #expect(set[Self.device] == "hw:0")
        #expect(set[Self.shape] == .square)
        #expect(set[Self.nested]?[Self.every] == .seconds(2))
        #expect(set.isSet(Self.device))
    }
}
