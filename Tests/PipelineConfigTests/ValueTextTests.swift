import Testing
@testable import PipelineConfig

@Test(arguments: [
    ("500ms", 500_000_000, "500ms"),
    ("2s", 2_000_000_000, "2s"),
    ("1.5s", 1_500_000_000, "1.5s"),
    ("1h30m", 5_400_000_000_000, "1h30m"),
    ("10m", 600_000_000_000, "10m"),
    ("90s", 90_000_000_000, "1m30s"),
    ("0", 0, "0s"),
    ("0s", 0, "0s"),
    ("250us", 250_000, "250us"),
    ("250µs", 250_000, "250us"),
    ("100ns", 100, "100ns"),
    ("1m0.5s", 60_500_000_000, "1m500ms"),
    ("1s500ms", 1_500_000_000, "1.5s"),
    ("2.25h", 8_100_000_000_000, "2h15m"),
    ("3600s", 3_600_000_000_000, "1h"),
    ("0.1s", 100_000_000, "100ms"),
    ("1h0m1s", 3_601_000_000_000, "1h1s"),
    (" 10s ", 10_000_000_000, "10s"),
] as [(String, Int64, String)])
func durationText(_ text: String, _ nanoseconds: Int64, _ canonical: String) throws {
    let d = try #require(Duration(configText: text))
    #expect(d == .nanoseconds(nanoseconds))
    #expect(d.configText == canonical)
    #expect(Duration(configText: canonical) == d)
}

@Test(arguments: ["", "10", "1.5", "ten", "-5s", "5x", "1.s", ".5s", "30m1h", "1h1h", "s", "1 s", "1e3s", "inf", "10 s"])
func durationTextRejected(_ text: String) {
    #expect(Duration(configText: text) == nil)
}

@Test func durationSeconds() {
    #expect(Duration.milliseconds(1500).seconds == 1.5)
    #expect(Duration.zero.seconds == 0)
}

@Test(arguments: [
    ("128k", 128_000, "128k"),
    ("2.5M", 2_500_000, "2500k"),
    ("2500k", 2_500_000, "2500k"),
    ("800bps", 800, "800bps"),
    ("128kbps", 128_000, "128k"),
    ("2.5Mbps", 2_500_000, "2500k"),
    ("128K", 128_000, "128k"),
    ("64kb/s", 64_000, "64k"),
    ("1G", 1_000_000_000, "1000000k"),
    ("1500b/s", 1500, "1500bps"),
    ("2000bps", 2000, "2k"),
    ("0bps", 0, "0bps"),
])
func bitrateText(_ text: String, _ bps: Int, _ canonical: String) throws {
    let b = try #require(Bitrate(configText: text))
    #expect(b.bitsPerSecond == bps)
    #expect(b.description == canonical)
    #expect(Bitrate(configText: canonical) == b)
}

@Test(arguments: ["", "fast", "-1k", "2.5", "k", "1.5.5k", "12kk", "k128", "1e3", "800", "2500"])
func bitrateTextRejected(_ text: String) {
    #expect(Bitrate(configText: text) == nil)
}

@Test func bitrateBasics() {
    #expect(Bitrate(kilobits: 128).bitsPerSecond == 128_000)
    #expect(Bitrate(bitsPerSecond: 2_500_999).kilobits == 2500)
    #expect(Bitrate(kilobits: 128) < Bitrate(kilobits: 2500))
}

@Test(arguments: [
    (OptionType.string, "string"),
    (.bool, "bool"),
    (.duration, "duration"),
    (.bitrate, "bitrate"),
    (.secret, "secret"),
    (.int, "int"),
    (.int(1...65535), "int 1...65535"),
    (.double(), "double"),
    (.double(0...1), "double 0.0...1.0"),
    (.choice(["h264", "vp8"]), "one of h264, vp8"),
    (.object(OptionSchema([])), "object"),
])
func optionTypeDisplayName(_ type: OptionType, _ name: String) {
    #expect(type.displayName == name)
}

@Test func optionValuesAccessors() {
    var v = OptionValues(["n": .int(3), "d": .double(1.5), "s": .string("x"), "b": .bool(true)])
    v["t"] = .duration(.seconds(2))
    v["r"] = .bitrate(Bitrate(kilobits: 128))
    v["k"] = .secret(Secret("hunter2"))
    v["o"] = .object(OptionValues(["w": .int(1)]))
    #expect(v.int("n") == 3)
    #expect(v.double("n") == 3.0)
    #expect(v.double("d") == 1.5)
    #expect(v.int("d") == nil)
    #expect(v.string("s") == "x")
    #expect(v.bool("b") == true)
    #expect(v.duration("t") == .seconds(2))
    #expect(v.bitrate("r") == Bitrate(kilobits: 128))
    #expect(v.secret("k")?.reveal() == "hunter2")
    #expect(v.object("o")?.int("w") == 1)
    #expect(v.string("missing") == nil)
    #expect(v.names == ["b", "d", "k", "n", "o", "r", "s", "t"])
    #expect(!v.description.contains("hunter2"))
}
