"""A real HTTP file server on 127.0.0.1 for the fetch tests: GET with Range / If-Range (ETag), and scripted faults.

Files are served from a dict path -> bytes, each with an ETag (the SHA-256 of its content, so a changed file has
another). Per path, `faults` says what the next requests do (each used once, in order): ``("cut", n)`` sends the
headers of the whole answer, n body bytes, and closes the connection; ``("stall", n)`` sends n bytes and then nothing
until the server closes; ``("trickle", seconds)`` sends a byte every `seconds` forever; ``("status", code)`` answers
that status; ``("redirect", 0)`` answers 302 to the same path. `sent` counts the body bytes sent per path,
`requests` records (path, Range, If-Range) of each request.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler

from tests.server_process import QuietServer


class FileServer:
    def __init__(self, files: dict[str, bytes] | None = None, *, ranges: bool = True):
        self.files: dict[str, bytes] = dict(files or {})
        self.faults: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.sent: dict[str, int] = defaultdict(int)
        self.requests: list[tuple[str, str | None, str | None]] = []
        self.authorization: list[str | None] = []  # the Authorization header of each request
        self.ranges = ranges
        self.closed = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.requests.append((path, self.headers.get("Range"), self.headers.get("If-Range")))
                    server.authorization.append(self.headers.get("Authorization"))
                    fault = server.faults[path].pop(0) if server.faults[path] else None
                try:
                    self._answer(path, fault)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _answer(self, path, fault):
                if fault is not None and fault[0] == "status":
                    return self._plain(int(fault[1]), b"scripted failure")
                if fault is not None and fault[0] == "redirect":  # to the same path: a loop while faults last
                    self.send_response(302)
                    self.send_header("Location", path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = server.files.get(path)
                if data is None:
                    return self._plain(404, b"not found")
                etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
                start = 0
                match = re.match(r"^bytes=(\d+)-$", self.headers.get("Range") or "")
                if_range = self.headers.get("If-Range")
                if server.ranges and match and (if_range is None or if_range == etag):
                    start = int(match.group(1))
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", etag)
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if fault is None:
                    self._send(path, body)
                elif fault[0] == "cut":
                    self._send(path, body[: int(fault[1])])
                    self.close_connection = True
                elif fault[0] == "stall":
                    self._send(path, body[: int(fault[1])])
                    server.closed.wait(30)
                    self.close_connection = True
                elif fault[0] == "trickle":
                    for i in range(len(body)):
                        if server.closed.wait(fault[1]):
                            break
                        self._send(path, body[i : i + 1])
                    self.close_connection = True

            def _send(self, path, chunk):
                self.wfile.write(chunk)
                self.wfile.flush()
                with server._lock:
                    server.sent[path] += len(chunk)

            def _plain(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def total_sent(self) -> int:
        return sum(self.sent.values())
