"""A webhook endpoint for the tests: answers 503 to the first POST, 200 to every later one,
and prints each body it accepted as one line on stdout.

usage: webhook_sink.py PORT
"""
import http.server
import sys

refused = []


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

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
