"""A webhook endpoint for the tests: answers 503 to the first POST (unless --accept-first),
200 to every later one, and prints each body it accepted as one line on stdout. With --until
TEXT it exits once it has accepted a body holding TEXT: its exit is the event a test waits on.

usage: webhook_sink.py PORT [--accept-first] [--until TEXT]
"""
import http.server
import os
import sys

arguments = sys.argv[2:]
refused = [b"--accept-first"] if "--accept-first" in arguments else []
until = arguments[arguments.index("--until") + 1].encode() if "--until" in arguments else None


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not refused:
            refused.append(body)
            self.send_response(503)
            self.end_headers()
            return
        print(self.headers.get("Content-Type"), body.decode(), flush=True)
        self.send_response(200)
        self.end_headers()
        if until is not None and until in body:
            self.wfile.flush()
            os._exit(0)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
