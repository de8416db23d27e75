import Foundation
import HLS
import Testing

// Real-world playlists, the same ones Fuzz/corpus/playlist/ seeds the fuzzer with.

private let base = URL(string: "http://127.0.0.1:8080/hls/stream.m3u8")!

private func url(_ string: String) -> URL { URL(string: string)! }

private struct NotMedia: Error { let playlist: Playlist }
private struct NotMultivariant: Error { let playlist: Playlist }

private func media(_ text: String, base: URL = base) throws -> MediaPlaylist {
    let playlist = try PlaylistParser.parse(text, base: base)
    guard case .media(let media) = playlist else { throw NotMedia(playlist: playlist) }
    return media
}

private func multivariant(_ text: String, base: URL = base) throws -> MultivariantPlaylist {
    let playlist = try PlaylistParser.parse(text, base: base)
    guard case .multivariant(let multivariant) = playlist else { throw NotMultivariant(playlist: playlist) }
    return multivariant
}

/// The error parsing `data` throws, nil if none.
private func failure(_ data: Data) -> PlaylistError? {
    do {
        _ = try PlaylistParser.parse(data, base: base)
        return nil
    } catch {
        return error
    }
}

private func failure(_ text: String) -> PlaylistError? { failure(Data(text.utf8)) }

/// nginx-rtmp's live playlist (hls_fragment 3s): relative names, a DISCONTINUITY where the publish began.
private let nginxRTMPLive = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-MEDIA-SEQUENCE:42
#EXT-X-TARGETDURATION:4
#EXT-X-DISCONTINUITY
#EXTINF:3.333,
stream-42.ts
#EXTINF:3.334,
stream-43.ts
#EXTINF:3.333,
stream-44.ts
"""#

/// `ffmpeg -f hls -hls_playlist_type vod`.
private let ffmpegVOD = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:10
#EXT-X-MEDIA-SEQUENCE:0
#EXT-X-PLAYLIST-TYPE:VOD
#EXTINF:10.010000,
out0.ts
#EXTINF:10.010000,
out1.ts
#EXTINF:4.170833,
out2.ts
#EXT-X-ENDLIST
"""#

/// Apple's advanced example (bipbop_adv), cut down: audio groups, CC, subtitles, I-frame playlists.
private let appleMultivariant = #"""
#EXTM3U
#EXT-X-VERSION:6
#EXT-X-INDEPENDENT-SEGMENTS

#EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=2168183,BANDWIDTH=2177116,CODECS="avc1.640020,mp4a.40.2",RESOLUTION=960x540,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud1",SUBTITLES="sub1"
v5/prog_index.m3u8
#EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=7968416,BANDWIDTH=8001098,CODECS="avc1.64002a,mp4a.40.2",RESOLUTION=1920x1080,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud1",SUBTITLES="sub1"
v9/prog_index.m3u8
#EXT-X-STREAM-INF:AVERAGE-BANDWIDTH=2390686,BANDWIDTH=2399619,CODECS="avc1.640020,ac-3",RESOLUTION=960x540,FRAME-RATE=60.000,CLOSED-CAPTIONS="cc1",AUDIO="aud2",SUBTITLES="sub1"
v5/prog_index.m3u8

#EXT-X-I-FRAME-STREAM-INF:AVERAGE-BANDWIDTH=186522,BANDWIDTH=187396,CODECS="avc1.64002a",RESOLUTION=1920x1080,URI="v7/iframe_index.m3u8"
#EXT-X-I-FRAME-STREAM-INF:AVERAGE-BANDWIDTH=155901,BANDWIDTH=157160,CODECS="avc1.64002a",RESOLUTION=1920x1080,URI="v6/iframe_index.m3u8"

#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,CHANNELS="2",URI="a1/prog_index.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud2",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,CHANNELS="6",URI="a2/prog_index.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud1",LANGUAGE="de",NAME="Deutsch",AUTOSELECT=YES,DEFAULT=NO,CHANNELS="2",URI="a1de/prog_index.m3u8"
#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,INSTREAM-ID="CC1"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="sub1",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,FORCED=NO,URI="s1/en/prog_index.m3u8"

#EXT-X-STREAM-INF:BANDWIDTH=63701,AVERAGE-BANDWIDTH=63143,CODECS="mp4a.40.2",AUDIO="aud1",NAME="audio only"
a1/prog_index.m3u8
"""#

/// fMP4 in one file: EXT-X-MAP and sub-ranges; one of another file in between.
private let fmp4ByteRange = #"""
#EXTM3U
#EXT-X-TARGETDURATION:6
#EXT-X-VERSION:7
#EXT-X-MEDIA-SEQUENCE:1
#EXT-X-PLAYLIST-TYPE:VOD
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MAP:URI="main.mp4",BYTERANGE="719@0"
#EXTINF:6.00000,
#EXT-X-BYTERANGE:1508000@719
main.mp4
#EXTINF:6.00000,
#EXT-X-BYTERANGE:1510000
main.mp4
#EXTINF:6.00000,
#EXT-X-BYTERANGE:2000@0
other.mp4
#EXTINF:3.00000,
#EXT-X-BYTERANGE:750000
main.mp4
#EXT-X-ENDLIST
"""#

/// RFC 8216 §8.5, extended: a key without IV, key rotation with an IV, then METHOD=NONE.
private let aes128Rotation = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-MEDIA-SEQUENCE:7794
#EXT-X-TARGETDURATION:15

#EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=52"

#EXTINF:2.833,
http://media.example.com/fileSequence52-A.ts
#EXTINF:15.0,
http://media.example.com/fileSequence52-B.ts
#EXTINF:13.333,
http://media.example.com/fileSequence52-C.ts

#EXT-X-KEY:METHOD=AES-128,URI="https://priv.example.com/key.php?r=53",IV=0x9c7db8778570d05c3177c349fd9236aa

#EXTINF:15.0,
http://media.example.com/fileSequence53-A.ts

#EXT-X-KEY:METHOD=NONE

#EXTINF:15.0,
http://media.example.com/fileSequence53-B.ts
"""#

/// One key in three KEYFORMATs (FairPlay, identity, Widevine), then a DRM-only key.
private let sampleAESKeyFormats = #"""
#EXTM3U
#EXT-X-VERSION:5
#EXT-X-TARGETDURATION:6
#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://twelve",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
#EXT-X-KEY:METHOD=SAMPLE-AES,URI="key.bin",KEYFORMAT="identity",IV=0x1
#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI="data:text/plain;base64,AAAAPnBzc2g=",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"
#EXTINF:6,
a.ts
#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI="data:text/plain;base64,AAAAPnBzc2g=",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"
#EXTINF:6,
b.ts
#EXT-X-ENDLIST
"""#

/// An ad break: DISCONTINUITYs, and URIs in every relative form.
private let discontinuityAds = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:6
#EXT-X-MEDIA-SEQUENCE:1200
#EXT-X-DISCONTINUITY-SEQUENCE:17
#EXTINF:6.006,
/live/main/1200.ts
#EXTINF:6.006,
/live/main/1201.ts
#EXT-X-DISCONTINUITY
#EXT-X-DATERANGE:ID="ad1",CLASS="com.example.ad",START-DATE="2024-03-01T12:00:12.012Z",DURATION=15.0
#EXTINF:5.0,
//ads.example.net/creative/a1/0.ts
#EXTINF:5.0,
../ads/1.ts
#EXTINF:5.0,
https://ads.example.net/creative/a1/2.ts?sig=abc,def
#EXT-X-DISCONTINUITY
#EXTINF:6.006,
/live/main/1202.ts
"""#

/// PROGRAM-DATE-TIME on some segments, carried on to the others; zones Z, +01:00 and +0000.
private let pdtCarryOn = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:4
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-PROGRAM-DATE-TIME:2024-03-01T12:00:00.000Z
#EXTINF:4.0,
a.ts
#EXTINF:4.0,
b.ts
#EXT-X-PROGRAM-DATE-TIME:2024-03-01T13:00:00.500+01:00
#EXTINF:2.0,
c.ts
#EXTINF:2.0,
d.ts
#EXT-X-PROGRAM-DATE-TIME:2024-03-01T12:00:20.250+0000
#EXTINF:2.0,
e.ts
"""#

/// An EVENT playlist still growing, with a comment and a title.
private let event = #"""
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-PLAYLIST-TYPE:EVENT
#EXT-X-TARGETDURATION:10
#EXT-X-MEDIA-SEQUENCE:0
#EXT-X-ALLOW-CACHE:NO
# a comment: the event began at noon
#EXTINF:10,Opening titles
fileSequence0.ts
#EXTINF:10,
fileSequence1.ts
"""#

/// Apple's LL-HLS example as a delta update: parts, preload hint, rendition reports, EXT-X-SKIP.
private let llHLS = #"""
#EXTM3U
#EXT-X-TARGETDURATION:4
#EXT-X-VERSION:6
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,CAN-SKIP-UNTIL=12.0
#EXT-X-PART-INF:PART-TARGET=0.33334
#EXT-X-MEDIA-SEQUENCE:266
#EXT-X-PROGRAM-DATE-TIME:2019-02-14T02:13:36.106Z
#EXT-X-MAP:URI="init.mp4"
#EXT-X-SKIP:SKIPPED-SEGMENTS=3
#EXT-X-BITRATE:1200
#EXTINF:4.00008,
fileSequence269.mp4
#EXT-X-GAP
#EXTINF:4.00008,
fileSequence270.mp4
#EXTINF:4.00008,
fileSequence271.mp4
#EXT-X-PART:DURATION=0.33334,URI="filePart272.0.mp4",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.33334,URI="filePart272.1.mp4"
#EXT-X-PART:DURATION=0.33334,URI="filePart272.2.mp4"
#EXTINF:4.00008,
fileSequence272.mp4
#EXT-X-PART:DURATION=0.33334,URI="filePart273.0.mp4",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.33334,URI="filePart273.1.mp4"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="filePart273.2.mp4"
#EXT-X-RENDITION-REPORT:URI="../1M/waitForMSN.php",LAST-MSN=273,LAST-PART=1
#EXT-X-RENDITION-REPORT:URI="../4M/waitForMSN.php",LAST-MSN=273,LAST-PART=1
"""#

/// A 404 page where the playlist should be.
private let html = #"""
<!DOCTYPE html>
<html lang="en">
<head>
  <title>404 Not Found</title>
</head>
<body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body>
</html>
"""#

@Suite struct PlaylistParserTests {
    // MARK: media playlists

    @Test func nginxRTMPLivePlaylist() throws {
        let playlist = try media(nginxRTMPLive)
        #expect(playlist.targetDuration == 4)
        #expect(playlist.mediaSequence == 42)
        #expect(playlist.isLive)
        #expect(playlist.playlistType == nil)
        #expect(playlist.segments == [
            Segment(uri: url("http://127.0.0.1:8080/hls/stream-42.ts"), duration: 3.333, sequence: 42, discontinuity: true),
            Segment(uri: url("http://127.0.0.1:8080/hls/stream-43.ts"), duration: 3.334, sequence: 43),
            Segment(uri: url("http://127.0.0.1:8080/hls/stream-44.ts"), duration: 3.333, sequence: 44),
        ])
        #expect(playlist.endSequence == 45)
    }

    @Test func ffmpegVODPlaylist() throws {
        let playlist = try media(ffmpegVOD, base: url("file:///srv/media/out.m3u8"))
        #expect(playlist.playlistType == .vod)
        #expect(playlist.isEnded)
        #expect(!playlist.isLive)
        #expect(playlist.segments.map(\.uri) == ["out0.ts", "out1.ts", "out2.ts"].map { url("file:///srv/media/\($0)") })
        #expect(playlist.segments.map(\.duration) == [10.01, 10.01, 4.170833])
        #expect(playlist.segments.map(\.sequence) == [0, 1, 2])
        #expect(abs(playlist.duration - 24.190833) < 1e-9)
    }

    @Test func fMP4WithMapAndByteRanges() throws {
        let playlist = try media(fmp4ByteRange, base: url("https://example.com/vod/bipbop/index.m3u8"))
        let main = url("https://example.com/vod/bipbop/main.mp4")
        let initSection = InitSection(uri: main, byteRange: ByteRange(offset: 0, length: 719))
        #expect(playlist.segments == [
            Segment(uri: main, duration: 6, sequence: 1, byteRange: ByteRange(offset: 719, length: 1_508_000), initSection: initSection),
            // No offset: it starts where the last range of the same file ended.
            Segment(uri: main, duration: 6, sequence: 2, byteRange: ByteRange(offset: 1_508_719, length: 1_510_000), initSection: initSection),
            Segment(uri: url("https://example.com/vod/bipbop/other.mp4"), duration: 6, sequence: 3,
                    byteRange: ByteRange(offset: 0, length: 2000), initSection: initSection),
            // The range of other.mp4 in between does not count: the SAME resource's last range does.
            Segment(uri: main, duration: 3, sequence: 4, byteRange: ByteRange(offset: 3_018_719, length: 750_000), initSection: initSection),
        ])
        #expect(playlist.segments.first?.byteRange?.header == "bytes=719-1508718")
    }

    @Test func aes128WithAndWithoutIVAndKeyRotation() throws {
        let playlist = try media(aes128Rotation)
        let first = Key(method: .aes128, uri: url("https://priv.example.com/key.php?r=52"))
        let second = Key(method: .aes128, uri: url("https://priv.example.com/key.php?r=53"),
                         iv: [0x9C, 0x7D, 0xB8, 0x77, 0x85, 0x70, 0xD0, 0x5C, 0x31, 0x77, 0xC3, 0x49, 0xFD, 0x92, 0x36, 0xAA])
        #expect(playlist.segments.map(\.key) == [first, first, first, second, nil])
        #expect(playlist.segments.map(\.sequence) == [7794, 7795, 7796, 7797, 7798])
        #expect(playlist.segments.map(\.uri.lastPathComponent) == [
            "fileSequence52-A.ts", "fileSequence52-B.ts", "fileSequence52-C.ts", "fileSequence53-A.ts", "fileSequence53-B.ts",
        ])
        #expect(playlist.targetDuration == 15)
    }

    @Test func oneKeyInSeveralKeyFormatsKeepsTheIdentityOne() throws {
        let playlist = try media(sampleAESKeyFormats)
        #expect(playlist.segments.count == 2)
        #expect(playlist.segments.first?.key == Key(method: .sampleAES, uri: url("http://127.0.0.1:8080/hls/key.bin"),
                                                    iv: Array(repeating: 0, count: 15) + [1], keyFormat: "identity"))
        #expect(playlist.segments.last?.key == Key(method: .other("SAMPLE-AES-CTR"), uri: url("data:text/plain;base64,AAAAPnBzc2g="),
                                                   keyFormat: "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"))
    }

    @Test func discontinuitiesAndEveryFormOfRelativeURI() throws {
        let playlist = try media(discontinuityAds)
        #expect(playlist.discontinuitySequence == 17)
        #expect(playlist.segments.map(\.uri) == [
            url("http://127.0.0.1:8080/live/main/1200.ts"),
            url("http://127.0.0.1:8080/live/main/1201.ts"),
            url("http://ads.example.net/creative/a1/0.ts"),
            url("http://127.0.0.1:8080/ads/1.ts"),
            url("https://ads.example.net/creative/a1/2.ts?sig=abc,def"),
            url("http://127.0.0.1:8080/live/main/1202.ts"),
        ])
        #expect(playlist.segments.map(\.discontinuity) == [false, false, true, false, false, true])
        #expect(playlist.segments.map(\.sequence) == Array(1200...1205))
    }

    @Test func programDateTimeIsCarriedOn() throws {
        let playlist = try media(pdtCarryOn)
        let noon = 1_709_294_400.0  // 2024-03-01T12:00:00Z
        #expect(playlist.segments.map { $0.programDateTime?.timeIntervalSince1970 } == [
            noon, noon + 4, noon + 0.5, noon + 2.5, noon + 20.25,
        ])
        #expect(playlist.segments.map(\.sequence) == [10, 11, 12, 13, 14])
    }

    @Test func programDateTimeForms() throws {
        func date(_ text: String) throws -> Double? {
            try media("#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:\(text)\n#EXTINF:1,\na.ts\n").segments.first?.programDateTime?.timeIntervalSince1970
        }
        #expect(try date("1969-07-20T20:17:40Z") == -14_182_940)
        #expect(try date("2019-02-14T02:13:36.106Z") == 1_550_110_416.106)
        #expect(try date("2024-03-01T07:00:00-05:00") == 1_709_294_400)
        #expect(try date("2024-03-01 12:00:00") == 1_709_294_400)  // no zone: UTC
        #expect(try date("2024-02-29T12:00:00.123456789+00") == 1_709_208_000.123456789)
        #expect(failure("#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:yesterday\n#EXTINF:1,\na.ts\n")
            == .malformed("#EXT-X-PROGRAM-DATE-TIME: \"yesterday\" is not an ISO 8601 date and time (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:2024-13-01T00:00:00Z\n")
            == .malformed("#EXT-X-PROGRAM-DATE-TIME: \"2024-13-01T00:00:00Z\" is not an ISO 8601 date and time (line 2)"))
    }

    @Test func eventPlaylist() throws {
        let playlist = try media(event)
        #expect(playlist.playlistType == .event)
        #expect(playlist.isLive)
        #expect(playlist.segments.map(\.uri.lastPathComponent) == ["fileSequence0.ts", "fileSequence1.ts"])
        #expect(playlist.segments.map(\.duration) == [10, 10])
    }

    @Test func lowLatencyTagsAttachNothing() throws {
        let playlist = try media(llHLS)
        let initSection = InitSection(uri: url("http://127.0.0.1:8080/hls/init.mp4"))
        // EXT-X-SKIP left three segments out: the first listed is 266 + 3.
        #expect(playlist.mediaSequence == 269)
        #expect(playlist.segments.map(\.sequence) == [269, 270, 271, 272])
        #expect(playlist.segments.map(\.uri.lastPathComponent) == [
            "fileSequence269.mp4", "fileSequence270.mp4", "fileSequence271.mp4", "fileSequence272.mp4",
        ])
        #expect(playlist.segments.allSatisfy { $0.initSection == initSection && $0.duration == 4.00008 && !$0.discontinuity })
        #expect(abs((playlist.segments.last?.programDateTime?.timeIntervalSince1970 ?? 0) - (1_550_110_416.106 + 3 * 4.00008)) < 1e-6)
        #expect(playlist.endSequence == 273)
        #expect(playlist.isLive)
    }

    @Test func crlfBOMAndBlanks() throws {
        let text = "\u{FEFF}#EXTM3U\r\n#EXT-X-VERSION:3\r\n#EXT-X-TARGETDURATION:8 \r\n#EXT-X-MEDIA-SEQUENCE:3\r\n\r\n"
            + "  #EXTINF:7.5,\r\n  seg3.ts  \r\n#EXTINF:8,\r\nseg4.ts\r\n#EXT-X-ENDLIST\r\n"
        let playlist = try media(text)
        #expect(playlist.targetDuration == 8)
        #expect(playlist.segments == [
            Segment(uri: url("http://127.0.0.1:8080/hls/seg3.ts"), duration: 7.5, sequence: 3),
            Segment(uri: url("http://127.0.0.1:8080/hls/seg4.ts"), duration: 8, sequence: 4),
        ])
        #expect(playlist.isEnded)
    }

    @Test func liveStreamNotStartedYetIsValid() throws {
        let playlist = try media("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:0\n")
        #expect(playlist == MediaPlaylist(targetDuration: 6))
        #expect(playlist.isLive)
    }

    @Test func textAndDataParseAlike() throws {
        #expect(try PlaylistParser.parse(ffmpegVOD, base: base) == PlaylistParser.parse(Data(ffmpegVOD.utf8), base: base))
    }

    // MARK: multivariant playlists

    @Test func appleMultivariantWithAudioGroups() throws {
        let playlist = try multivariant(appleMultivariant, base: url("https://devstreaming.example.com/bipbop_adv/master.m3u8"))
        func at(_ path: String) -> URL { url("https://devstreaming.example.com/bipbop_adv/\(path)") }
        #expect(playlist.variants == [
            .init(uri: at("v5/prog_index.m3u8"), bandwidth: 2_177_116, averageBandwidth: 2_168_183, resolution: "960x540",
                  codecs: ["avc1.640020", "mp4a.40.2"], frameRate: 60, audioGroup: "aud1"),
            .init(uri: at("v9/prog_index.m3u8"), bandwidth: 8_001_098, averageBandwidth: 7_968_416, resolution: "1920x1080",
                  codecs: ["avc1.64002a", "mp4a.40.2"], frameRate: 60, audioGroup: "aud1"),
            .init(uri: at("v5/prog_index.m3u8"), bandwidth: 2_399_619, averageBandwidth: 2_390_686, resolution: "960x540",
                  codecs: ["avc1.640020", "ac-3"], frameRate: 60, audioGroup: "aud2"),
            .init(uri: at("a1/prog_index.m3u8"), bandwidth: 63701, averageBandwidth: 63143, codecs: ["mp4a.40.2"],
                  audioGroup: "aud1", name: "audio only"),
        ])
        #expect(playlist.variants.map(\.isAudioOnly) == [false, false, false, true])
        #expect(playlist.renditions == [
            .init(type: .audio, groupID: "aud1", name: "English", uri: at("a1/prog_index.m3u8"), language: "en", isDefault: true, autoselect: true),
            .init(type: .audio, groupID: "aud2", name: "English", uri: at("a2/prog_index.m3u8"), language: "en", isDefault: true, autoselect: true),
            .init(type: .audio, groupID: "aud1", name: "Deutsch", uri: at("a1de/prog_index.m3u8"), language: "de", isDefault: false, autoselect: true),
            .init(type: .closedCaptions, groupID: "cc1", name: "English", language: "en", isDefault: true, autoselect: true),
            .init(type: .subtitles, groupID: "sub1", name: "English", uri: at("s1/en/prog_index.m3u8"), language: "en", isDefault: true, autoselect: true),
        ])
    }

    @Test func streamInfAttributesInAnyOrderAndSpacing() throws {
        let playlist = try multivariant("""
            #EXTM3U
            #EXT-X-STREAM-INF:CODECS=" avc1.4d401f , mp4a.40.2 ,",BANDWIDTH=800000, NAME="SD",VIDEO="vid",FRAME-RATE=bad
            # a comment between the tag and its URI
            sd/index.m3u8?token=a%20b
            #EXT-X-STREAM-INF:RESOLUTION=416x234
            https://cdn.example.com/low.m3u8
            """)
        #expect(playlist.variants == [
            .init(uri: url("http://127.0.0.1:8080/hls/sd/index.m3u8?token=a%20b"), bandwidth: 800_000,
                  codecs: ["avc1.4d401f", "mp4a.40.2"], videoGroup: "vid", name: "SD"),
            // BANDWIDTH missing: 0, not an error.
            .init(uri: url("https://cdn.example.com/low.m3u8"), bandwidth: 0, resolution: "416x234"),
        ])
    }

    // MARK: not playlists, too large

    @Test func htmlPage() {
        #expect(failure(html) == .notAPlaylist(starts: "<!DOCTYPE html> <html lang=\"en\"> <head>"))
        #expect(failure(html)?.description.contains("it starts with \"<!DOCTYPE html>") == true)
    }

    @Test func emptyBodies() {
        #expect(failure("") == .notAPlaylist(starts: "an empty body"))
        #expect(failure(" \r\n\n\t") == .notAPlaylist(starts: "an empty body"))
        #expect(failure("\u{FEFF}") == .notAPlaylist(starts: "an empty body"))
        #expect(failure(Data([0x00, 0x01, 0xFF])) == .notAPlaylist(starts: "binary data"))
    }

    @Test("a segment's URL given for the playlist's: said to be media, by its format, not quoted as bytes")
    func mediaBodies() {
        var packet = [UInt8](repeating: 0xFF, count: 376)
        (packet[0], packet[1], packet[188], packet[189]) = (0x47, 0x40, 0x47, 0x01)
        #expect(failure(Data(packet)) == .media(format: "MPEG-TS"))
        #expect(failure(Data(packet))?.description.contains("give the URL of the .m3u8 playlist") == true)
        #expect(failure(Data([0, 0, 0, 24]) + Data("ftypiso6".utf8) + Data(count: 16)) == .media(format: "MP4"))
        #expect(failure(Data("ID3".utf8) + Data([4, 0, 0, 0, 0, 0x3F])) == .media(format: "packed audio (ID3-tagged)"))
        #expect(failure(Data([0xFF, 0xF1, 0x50, 0x80])) == .media(format: "AAC (ADTS)"))
        #expect(failure("Gone: see elsewhere") == .notAPlaylist(starts: "Gone: see elsewhere"), "text starting with G is no transport stream")
    }

    @Test func nonUTF8Body() {
        let latin1 = Data("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nca".utf8) + [0xF1] + Data("on.ts\n".utf8)
        #expect(failure(latin1) == .notUTF8)
    }

    @Test func lineOfTwoMegabytes() throws {
        let line = String(repeating: "a", count: 2 * 1024 * 1024)
        #expect(failure("#EXTM3U\n#EXTINF:1,\n\(line).ts\n")
            == .tooLarge("line 3 is 2097155 bytes, over the limit of 65536 bytes"))
        // The longest line allowed is fine.
        let longest = String(repeating: "a", count: PlaylistParser.maxLineBytes - 3)
        #expect(try media("#EXTM3U\n#EXTINF:1,\n\(longest).ts\n").segments.first?.uri.lastPathComponent == "\(longest).ts")
    }

    @Test func bodyOverTheLimit() {
        var data = Data("#EXTM3U\n".utf8)
        data.append(Data(count: PlaylistParser.maxBytes + 1 - data.count))
        #expect(failure(data) == .tooLarge("the body is 8388609 bytes, over the limit of 8388608 bytes"))
    }

    // MARK: malformed

    @Test func endlistWithoutSegments() {
        #expect(failure("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-ENDLIST\n") == .malformed("it lists no segments"))
    }

    @Test(arguments: [
        ("-1", "#EXTINF: the duration -1 is negative (line 2)"),
        ("abc", "#EXTINF: the duration \"abc\" is not a number (line 2)"),
        ("nan", "#EXTINF: the duration \"nan\" is not a number (line 2)"),
        ("inf", "#EXTINF: the duration \"inf\" is not a number (line 2)"),
        ("1e3", "#EXTINF: the duration \"1e3\" is not a number (line 2)"),
        ("86400.5", "#EXTINF: the duration \"86400.5\" is longer than a day (line 2)"),
        (String(repeating: "9", count: 400), "#EXTINF: the duration \"\(String(repeating: "9", count: 40))…\" is longer than a day (line 2)"),
        ("", "#EXTINF: the duration \"\" is not a number (line 2)"),
    ])
    func badDurations(value: String, message: String) {
        #expect(failure("#EXTM3U\n#EXTINF:\(value),\na.ts\n") == .malformed(message))
    }

    @Test func badSequenceNumbersAndTargetDurations() {
        #expect(failure("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:-5\n")
            == .malformed("#EXT-X-MEDIA-SEQUENCE: the media sequence number -5 is negative (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:12a\n")
            == .malformed("#EXT-X-MEDIA-SEQUENCE: the media sequence number \"12a\" is not a whole number (line 2)"))
        // Beyond Int: refused, not trapped on.
        #expect(failure("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:99999999999999999999999\n")
            == .malformed("#EXT-X-MEDIA-SEQUENCE: the media sequence number \"99999999999999999999999\" is too large (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807\n")
            == .malformed("#EXT-X-DISCONTINUITY-SEQUENCE: the discontinuity sequence number \"9223372036854775807\" is too large (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-TARGETDURATION:-10\n")
            == .malformed("#EXT-X-TARGETDURATION: the target duration -10 is negative (line 2)"))
    }

    @Test func mediaSequenceAfterTheSegmentsStillNumbersThem() throws {
        let playlist = try media("#EXTM3U\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n#EXT-X-MEDIA-SEQUENCE:100\n")
        #expect(playlist.segments.map(\.sequence) == [100, 101])
    }

    @Test func badByteRanges() {
        #expect(failure("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:0@10\na.mp4\n")
            == .malformed("#EXT-X-BYTERANGE: the range \"0@10\" has no bytes (line 3)"))
        #expect(failure("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:10@x\na.mp4\n")
            == .malformed("#EXT-X-BYTERANGE: \"10@x\" is not <length>[@<offset>] (line 3)"))
        #expect(failure("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:10@-4\na.mp4\n")
            == .malformed("#EXT-X-BYTERANGE: the range \"10@-4\" is out of bounds (line 3)"))
        // The end would overflow an Int (and ByteRange.header with it).
        #expect(failure("#EXTM3U\n#EXTINF:1,\n#EXT-X-BYTERANGE:10@9223372036854775800\na.mp4\n")
            == .malformed("#EXT-X-BYTERANGE: the range 10@9223372036854775800 ends past the largest offset (line 4)"))
        #expect(failure("#EXTM3U\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"9223372036854775806@9\"\n")
            == .malformed("#EXT-X-MAP: the range 9223372036854775806@9 ends past the largest offset (line 2)"))
    }

    @Test func badKeysAndMaps() {
        #expect(failure("#EXTM3U\n#EXT-X-KEY:URI=\"k\"\n") == .malformed("#EXT-X-KEY: it has no METHOD (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x0123456789abcdef0123456789abcdef00\n")
            == .malformed("#EXT-X-KEY: the IV \"0x0123456789abcdef0123456789abcdef00\" is not 16 bytes in hexadecimal (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,IV=0xZZ\n")
            == .malformed("#EXT-X-KEY: the IV \"0xZZ\" is not 16 bytes in hexadecimal (line 2)"))
        #expect(failure("#EXTM3U\n#EXT-X-MAP:BYTERANGE=\"10@0\"\n") == .malformed("#EXT-X-MAP: it has no URI (line 2)"))
    }

    @Test func segmentURIWithoutEXTINF() {
        #expect(failure("#EXTM3U\n#EXT-X-TARGETDURATION:6\nsegment0.ts\n")
            == .malformed("#EXTINF: none before the segment URI \"segment0.ts\" (line 3)"))
        #expect(failure("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n")
            == .malformed("#EXT-X-STREAM-INF: no URI line follows it (line 2)"))
    }

    @Test func mediaSequenceOrSkipAfterSegmentsRenumbersOnce() throws {
        let playlist = try media("#EXTM3U\n#EXTINF:1,\na.ts\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:1,\nb.ts\n#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n")
        #expect(playlist.mediaSequence == 9)
        #expect(playlist.segments.map(\.sequence) == [9, 10])
    }

    // MARK: speed

    /// Inputs that a quadratic step would turn into a hang: a MEDIA-SEQUENCE after each of many
    /// segments, and lines of thousands of repeated attributes.
    @Test func hostileRepetitionStaysLinear() throws {
        var text = "#EXTM3U\n"
        for i in 0..<20_000 { text += "#EXTINF:1,\n\(i).ts\n#EXT-X-MEDIA-SEQUENCE:\(i)\n" }
        let attributes = "#EXT-X-KEY:METHOD=NONE," + String(repeating: "A=1,", count: 16_000) + "\n"
        text += String(repeating: attributes, count: 30)
        var segments: [Segment] = []
        let elapsed = ContinuousClock().measure {
            if case .media(let media) = try? PlaylistParser.parse(text, base: base) { segments = media.segments }
        }
        #expect(elapsed < .seconds(2))
        #expect(segments.count == 20_000)
        #expect(segments.last?.sequence == 19_999 + 19_999)
    }

    @Test func hundredThousandSegmentsInWellUnderASecond() throws {
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:1000000\n"
        text += "#EXT-X-PROGRAM-DATE-TIME:2024-03-01T12:00:00.000Z\n"
        text.reserveCapacity(4_000_000)
        for i in 0..<100_000 {
            text += "#EXTINF:6.006,\nmedia_\(1_000_000 + i).ts\n"
        }
        let data = Data(text.utf8)
        var playlist: MediaPlaylist?
        // The best of three: other tests run alongside, and this machine has two cores.
        let elapsed = (0..<3).map { _ in
            ContinuousClock().measure {
                if case .media(let media) = try? PlaylistParser.parse(data, base: base) { playlist = media }
            }
        }.min() ?? .seconds(60)
        print("100,000 segments (\(data.count) bytes) parsed in \(elapsed)")
        #expect(elapsed < .seconds(1))
        let segments = try #require(playlist).segments
        #expect(segments.count == 100_000)
        #expect(segments.last?.sequence == 1_099_999)
        #expect(segments.last?.uri == url("http://127.0.0.1:8080/hls/media_1099999.ts"))
        #expect(segments.last?.programDateTime?.timeIntervalSince1970 ?? 0 > 1_709_294_400 + 99_999 * 6.006 - 0.01)
    }
}
