import Timing
import CastlineKit
import Testing

@Suite("Backoff and secrets")
struct SupportTypesTests {
    @Test("1 s doubling to 30 s")
    func backoffDoubles() {
        let backoff = Backoff()
        let delays = (1...8).map { backoff.delay(attempt: $0, random: 0.5).seconds }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test("jitter stays within ±20 %")
    func backoffJitter() {
        let backoff = Backoff()
        #expect(backoff.delay(attempt: 3, random: 0).seconds == 3.2)
        #expect(backoff.delay(attempt: 3, random: 0.999_999).seconds <= 4.8)
        #expect(backoff.delay(attempt: 3, random: 0.999_999).seconds > 4.79)
    }

    @Test("secrets are masked where they are used; long ones wherever they stand, percent-encoded too")
    func masking() {
        let masker = SecretMasker(secrets: [Secret("abcdefgh"), Secret("abcdefgh/ijk")])
        #expect(masker.mask("key abcdefgh/ijk and abcdefgh") == "key **** and ****")
        #expect(masker.mask("url rtmp://h/app/abcdefgh%2Fijk") == "url rtmp://h/app/****")
        masker.add(Secret("later-key-1"))
        #expect(masker.mask("publishing later-key-1") == "publishing ****")
        #expect(masker.mask("nothing here") == "nothing here")
        // Short keys are not hunted through all text: only where they are used.
        let short = SecretMasker(secrets: [Secret("live"), Secret("1"), Secret("x")])
        let text = "rtmp://127.0.0.1:37701/live carries video/x-h264"
        #expect(short.mask(text) == text)
        short.add(use: "rtmp://127.0.0.1:37701/live/live", masked: "rtmp://127.0.0.1:37701/live/****")
        #expect(short.mask("cannot publish to rtmp://127.0.0.1:37701/live/live: refused") == "cannot publish to rtmp://127.0.0.1:37701/live/****: refused")
        #expect(short.mask(text) == text)
    }
}
