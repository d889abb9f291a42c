#!/usr/bin/env python3
"""A small HTTP server for tests/executors.rs.

Listens on 127.0.0.1, port chosen by the OS; prints the port as the first
line of stdout. POST routes:
  /echo     200, {"got": <request JSON>, "content_type": ..., "auth": ...}
  /fail     500, body "database down"
  /slow     sleeps 5 s, then 200 {}
  /garbage  200, body that is not JSON
  /empty    200, empty body
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if self.path == "/echo":
            self.reply(
                200,
                json.dumps(
                    {
                        "got": json.loads(raw),
                        "content_type": self.headers.get("Content-Type"),
                        "auth": self.headers.get("Authorization"),
                    }
                ),
            )
        elif self.path == "/fail":
            self.reply(500, "database down\n")
        elif self.path == "/slow":
            time.sleep(5)
            self.reply(200, "{}")
        elif self.path == "/garbage":
            self.reply(200, "<html>not json</html>")
        elif self.path == "/empty":
            self.reply(200, "")
        else:
            self.reply(404, "no such route")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
