"""A plain-HTTP forward proxy on a loopback port, as http_proxy names one: each request line
("GET http://host/path") is printed, then fetched and answered.

usage: forward_proxy.py PORT
"""
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        print("proxied %s" % self.path, flush=True)
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(self.path) as reply:
                status, body = reply.status, reply.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, b""
        except OSError:
            status, body = 502, b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
print("ready", flush=True)
server.serve_forever()
