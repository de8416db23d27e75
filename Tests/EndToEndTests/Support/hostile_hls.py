"""An HLS server that misbehaves on purpose, on a loopback port, for castline's bad-input tests.

usage: hostile_hls.py PORT SEGMENT_TS [RUN_DIR]
Paths:
  /redirect-loop.m3u8   302 to itself, forever
  /silent.m3u8          accepts, reads the request, never answers
  /live-404.m3u8        a live playlist whose segments all answer 404 (the window moves on)
  /garbage.m3u8         a live playlist whose segments are random bytes
  /turns-404.m3u8       a live playlist whose segments are real until 6 s after it was first asked for, then 404
  /stops.m3u8           a live playlist that lists a new 2 s segment every 2 s from when it was first asked
                        for (prints "stops began EPOCH"), none from 4 s to 12 s, then one every 2 s again
  /live.m3u8            a live playlist that lists a new 2 s segment every 2 s, each served at once; its
                        EXT-X-PROGRAM-DATE-TIMEs (as all live ones here) say when each segment's first sample was made
  /stall.m3u8           a live playlist (a new 2 s segment every 2 s) whose segment 6 after the live edge when it
                        was first asked for answers only after 8 s: every player that started then stalls once.
                        With RUN_DIR, its segments are RUN_DIR's run-K.ts in turn (one stream cut in 2 s segments,
                        its timestamps running on), so a player that decodes it plays it at real-time pace
  /run.m3u8             /live.m3u8 with RUN_DIR's segments (one stream, its timestamps running on), none held
  /jump.m3u8            /stall.m3u8's stream with none held (RUN_DIR's segments), whose programme times jump 8 s
                        back at segment 4 after the live edge when it was first asked for, after an
                        EXT-X-DISCONTINUITY: as when a backup encoder whose clock runs 8 s behind takes over
  /cookie.m3u8          a VOD of one segment that sets the cookie castline-token (as some CDNs do on the multivariant
                        playlist); /cookie/N.ts answers 403 without it, and a gzipped copy of the playlist is
                        /cookie-gzip.m3u8 (Content-Encoding: gzip, whatever the request asked); /cookie-hop.m3u8
                        sets it on a 302 back to itself; /cookie-elsewhere.m3u8 sets it for Domain=example.com
  /to-socket.m3u8       a 302 to http+unix://, a local socket
  /abr.m3u8             a multivariant playlist: /live.m3u8 as "low" (50 kbit/s, listed first) and as "high" (500 kbit/s)
  /with-audio.m3u8      a multivariant playlist: /live.m3u8 as the variant, its EXT-X-MEDIA audio rendition /stall.m3u8
  /empty.m3u8           a live playlist that lists no segment
  /huge-line.m3u8       a playlist with a 2 MB line
  /big.m3u8             a live playlist of 100,000 segments (each one SEGMENT_TS); the window moves on
  /bom-crlf.m3u8        a VOD with a byte-order mark and CRLF line ends (segments: SEGMENT_TS)
  /seg/N.ts             SEGMENT_TS
"""
import gzip
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
SEGMENT = open(sys.argv[2], "rb").read()
RUN = sorted((os.path.join(sys.argv[3], name) for name in os.listdir(sys.argv[3]) if name.startswith("run-") and name.endswith(".ts")),
             key=lambda path: int(path.rsplit("-", 1)[1][:-3])) if len(sys.argv) > 3 else []
START = time.time()
TURNS = None
STOPS = None
STALL_AT = None
JUMP_AT = None


def stops_sequence():
    """The newest media sequence /stops.m3u8 lists: its clock stands still from 4 s to 10 s."""
    elapsed = time.time() - STOPS
    moving = elapsed if elapsed < 4 else 4 if elapsed < 10 else elapsed - 6
    return 1000 + int(moving / 2)


def live_sequence():
    """The media sequence of a live window that gains a 2 s segment every 2 s."""
    return 1000 + int((time.time() - START) / 2)


def program_date_time(n, count):
    """When segment n's first sample was made: the newest of `count` is whole when the window moves to list it."""
    made = START + (n - (count - 1) - 1000) * 2 - 2
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(made)) + ".%03dZ" % int((made % 1) * 1000)


def run_segment(n):
    """Live segment n's bytes from the run: consecutive segments, consecutive media."""
    with open(RUN[(n - 1000) % len(RUN)], "rb") as run:
        return run.read()


def live_playlist(prefix, count=5, jump_at=None):
    first = live_sequence()
    lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", f"#EXT-X-MEDIA-SEQUENCE:{first}"]
    if jump_at is not None and first > jump_at:
        lines += ["#EXT-X-DISCONTINUITY-SEQUENCE:1"]
    for n in range(first, first + count):
        date = program_date_time(n, count)
        if jump_at is not None and n >= jump_at:
            lines += ["#EXT-X-DISCONTINUITY"] if n == jump_at else []
            date = program_date_time(n - 4, count)
        lines += [f"#EXT-X-PROGRAM-DATE-TIME:{date}", "#EXTINF:2.0,", f"{prefix}{n}.ts"]
    return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        sys.stderr.write("%s\n" % (args[1] if len(args) > 1 else args))

    def send(self, status, body, kind="application/vnd.apple.mpegurl"):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location, cookie=None):
        self.send_response(302)
        self.send_header("Location", location)
        if cookie:
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/redirect-loop.m3u8":
            self.redirect("/redirect-loop.m3u8")
        elif path == "/silent.m3u8":
            time.sleep(3600)
        elif path == "/live-404.m3u8":
            self.send(200, live_playlist("missing/"))
        elif path == "/turns-404.m3u8":
            global TURNS
            TURNS = TURNS or live_sequence() + 3
            first = live_sequence()
            lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", f"#EXT-X-MEDIA-SEQUENCE:{first}"]
            for n in range(first, first + 5):
                lines += ["#EXTINF:2.0,", f"seg/{n}.ts" if n < TURNS else f"missing/{n}.ts"]
            self.send(200, "\n".join(lines) + "\n")
        elif path == "/stops.m3u8":
            global STOPS
            if STOPS is None:
                STOPS = time.time()
                print("stops began %.3f" % STOPS, flush=True)
            first = stops_sequence() - 4
            lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", f"#EXT-X-MEDIA-SEQUENCE:{first}"]
            for n in range(first, first + 5):
                lines += ["#EXTINF:2.0,", f"seg/{n}.ts"]
            self.send(200, "\n".join(lines) + "\n")
        elif path == "/abr.m3u8":
            self.send(200, "#EXTM3U\n"
                      '#EXT-X-STREAM-INF:BANDWIDTH=50000,NAME="low"\nlive.m3u8?low\n'
                      '#EXT-X-STREAM-INF:BANDWIDTH=500000,NAME="high"\nlive.m3u8?high\n')
        elif path == "/with-audio.m3u8":
            self.send(200, "#EXTM3U\n"
                      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,AUTOSELECT=YES,URI="stall.m3u8?audio"\n'
                      '#EXT-X-STREAM-INF:BANDWIDTH=500000,AUDIO="aud"\nlive.m3u8?video\n')
        elif path == "/live.m3u8":
            self.send(200, live_playlist("seg/"))
        elif path == "/stall.m3u8":
            global STALL_AT
            STALL_AT = STALL_AT or live_sequence() + 6
            self.send(200, live_playlist("stall/"))
        elif path in ("/cookie.m3u8", "/cookie-gzip.m3u8"):
            body = b"#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:2.0,\ncookie/0.ts\n#EXT-X-ENDLIST\n"
            zipped = path == "/cookie-gzip.m3u8"
            body = gzip.compress(body) if zipped else body
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.apple.mpegurl")
            self.send_header("Set-Cookie", "castline-token=granted; Path=/; Max-Age=60")
            if zipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path == "/cookie-hop.m3u8":
            # The token set on a redirect back to the same URL, as some CDNs do.
            if "castline-token=granted" in (self.headers.get("Cookie") or ""):
                self.send(200, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:2.0,\ncookie/0.ts\n#EXT-X-ENDLIST\n")
            else:
                self.redirect("/cookie-hop.m3u8", cookie="castline-token=granted; Path=/")
        elif path == "/to-socket.m3u8":
            # A redirect to a local socket: a player follows redirects on the web only.
            self.redirect("http+unix://%2Fvar%2Frun%2Fdocker.sock/containers/json")
        elif path == "/cookie-elsewhere.m3u8":
            # A cookie for a domain this host is not in: refused, as browsers refuse it.
            self.send_response(200)
            self.send_header("Set-Cookie", "castline-token=granted; Domain=example.com; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith("/cookie/"):
            granted = "castline-token=granted" in (self.headers.get("Cookie") or "")
            self.send(200, SEGMENT, "video/mp2t") if granted else self.send(403, "no token", "text/plain")
        elif path == "/run.m3u8":
            self.send(200, live_playlist("run/"))
        elif path == "/jump.m3u8":
            global JUMP_AT
            JUMP_AT = JUMP_AT or live_sequence() + 4
            self.send(200, live_playlist("run/", jump_at=JUMP_AT))
        elif path.startswith("/run/"):
            self.send(200, run_segment(int(path[len("/run/"):-3])), "video/mp2t")
        elif path.startswith("/stall/"):
            if path == f"/stall/{STALL_AT}.ts":
                time.sleep(8)
            self.send(200, run_segment(int(path[len("/stall/"):-3])) if RUN else SEGMENT, "video/mp2t")
        elif path == "/garbage.m3u8":
            self.send(200, live_playlist("junk/"))
        elif path.startswith("/junk/"):
            self.send(200, os.urandom(64 * 1024), "video/mp2t")
        elif path == "/empty.m3u8":
            self.send(200, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n")
        elif path == "/huge-line.m3u8":
            self.send(200, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#" + "x" * (2 * 1024 * 1024) + "\n")
        elif path == "/big.m3u8":
            first = live_sequence()
            parts = ["#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:%d\n" % first]
            parts += ["#EXTINF:2.0,\nseg/%d.ts\n" % n for n in range(first, first + 100000)]
            self.send(200, "".join(parts))
        elif path == "/bom-crlf.m3u8":
            text = "#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n#EXT-X-PLAYLIST-TYPE:VOD\r\n"
            text += "".join("#EXTINF:2.0,\r\nseg/%d.ts\r\n" % n for n in range(2)) + "#EXT-X-ENDLIST\r\n"
            self.send(200, b"\xef\xbb\xbf" + text.encode())
        elif path.startswith("/seg/"):
            self.send(200, SEGMENT, "video/mp2t")
        else:
            self.send(404, "not found", "text/plain")


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    pass
