"""A loopback HTTP server that answers what it is told to: the wrong-shape, HTML, empty and error answers a real
Label Studio or model server never gives, but a proxy, a wrong URL or a broken deployment does.

Not a mock of a library: a real ``http.server`` on 127.0.0.1 that the clients reach over HTTP. Each request
is answered by the first rule whose path prefix matches (``answers``: prefix -> (status, content type, body)),
else by ``default``. A body may hold ``{headers}``: the request's headers, one ``Name: value`` a line, as a
debugging proxy's error page echoes them (what must never reach a user's terminal when they hold a key).
"""

from __future__ import annotations

import http.server
import threading

HTML = "text/html; charset=utf-8"
JSON = "application/json"


class AnswerServer:
    """``with AnswerServer({"/api/projects": (200, JSON, '{"foo": 1}')}) as srv:`` ``srv.url``; ``srv.seen`` lists
    ``(method, path)`` of the requests."""

    def __init__(self, answers: dict[str, tuple[int, str, str]] | None = None,
                 default: tuple[int, str, str] = (200, JSON, "{}")):
        self.answers = dict(answers or {})
        self.default = default
        self.seen: list[tuple[str, str]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.seen.append((self.command, self.path))
                path = self.path.split("?", 1)[0]
                status, ctype, body = next((a for prefix, a in server.answers.items() if path.startswith(prefix)),
                                           server.default)
                echoed = "\n".join(f"{k}: {v}" for k, v in self.headers.items())
                data = body.replace("{headers}", echoed).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = _answer  # noqa: N815 - http.server's names

            def log_message(self, *a):
                pass

        self._srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._srv.daemon_threads = True
        self.host = f"127.0.0.1:{self._srv.server_address[1]}"
        self.url = f"http://{self.host}"

    def __enter__(self) -> AnswerServer:
        threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._srv.shutdown()
        self._srv.server_close()
