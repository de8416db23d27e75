import HLS
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

    @Test("secrets are masked whole, percent-encoded too, and ones added later")
    func masking() {
        let masker = SecretMasker(secrets: [Secret("abc"), Secret("abc/def")])
        #expect(masker.mask("key abc/def and abc") == "key **** and ****")
        #expect(masker.mask("url rtmp://h/app/abc%2Fdef") == "url rtmp://h/app/****")
        masker.add(Secret("later-key"))
        #expect(masker.mask("publishing later-key") == "publishing ****")
        #expect(masker.mask("nothing here") == "nothing here")
    }
}
