import CastlineApp
import Testing

@Suite("castline load's flags: the ramp and the shard")
struct LoadRunTests {
    @Test("a shard runs every COUNT-th viewer from its index, and the shards together run each viewer once")
    func shards() throws {
        let all = try (0..<4).flatMap { index in try #require(LoadRun.Shard("\(index)/4", environment: [:])).viewers(of: 10) }
        #expect(all.sorted() == Array(1...10))
        #expect(LoadRun.Shard("1/4", environment: [:])?.viewers(of: 10) == [2, 6, 10])
    }

    @Test("JOB_COMPLETION_INDEX gives the index (the same command line in every pod); out of range or malformed is refused")
    func jobIndex() {
        #expect(LoadRun.Shard("/4", environment: ["JOB_COMPLETION_INDEX": "3"]) == LoadRun.Shard(index: 3, count: 4))
        #expect(LoadRun.Shard("0/4", environment: ["JOB_COMPLETION_INDEX": "2"])?.index == 2)
        for bad in ["4/4", "/4", "a/b", "1", "1/0"] { #expect(LoadRun.Shard(bad, environment: [:]) == nil, "\(bad)") }
        #expect(LoadRun.Shard("/4", environment: ["JOB_COMPLETION_INDEX": "9"]) == nil)
    }

    @Test("the ramp: 50/s or a bare 50; nothing at or under 0")
    func ramp() {
        #expect(LoadRun.Ramp("50/s")?.perSecond == 50 && LoadRun.Ramp("2.5")?.perSecond == 2.5)
        for bad in ["0/s", "-1", "fast", "/s"] { #expect(LoadRun.Ramp(bad) == nil, "\(bad)") }
    }
}
