"""``trb-collect serve``: the subject's app in a browser, through textual-serve.

textual-serve (``textual_serve.server.Server``) is an aiohttp server: ``/`` is a page with an
xterm.js terminal; each browser connection opens the websocket ``/ws``, and for it the server
starts the command given here in a shell of its own (``TEXTUAL_DRIVER`` set to Textual's web
driver) and relays keys and screen between the two. So every connection is its own app process
and its own subject (a fresh random subject id, its own draft); closing the tab ends that
process, leaving its draft, as leaving the app in a terminal does.

A browser gets a cookie (``trb-collect-browser``: 32 random hex digits, nothing else) with the
page; each connection's app is started with it (``run --browser KEY``), and the draft records it.
So when the same browser comes back (textual-serve's "Restart" after the app ended, a reload) while
its run is unfinished, the app offers that run back (carry on, or start as a new person) instead of
starting a new subject beside the old draft. The app's stderr (how each run ended, with the
experimenter's resume and discard commands) goes to this server's output.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import sys
from pathlib import Path

__all__ = ["serve", "app_command", "BROWSER_COOKIE"]

#: The cookie naming a browser (random; the app offers that browser's unfinished run back).
BROWSER_COOKIE = "trb-collect-browser"
_KEY = re.compile(r"^[0-9a-f]{32}$")


def app_command(study_path: str | os.PathLike, corpus_dir: str | os.PathLike, *,
                context_id: str | None = None) -> str:
    """The shell command the server runs for each connection: ``python -m collect.cli run STUDY --corpus DIR``,
    with this interpreter and absolute paths (the server's working directory does not matter)."""
    argv = [sys.executable, "-m", "collect.cli", "run", str(Path(study_path).resolve()), "--corpus",
            str(Path(corpus_dir).resolve())]
    if context_id is not None:
        argv += ["--context", context_id]
    return shlex.join(argv)


def serve(study_path: str | os.PathLike, corpus_dir: str | os.PathLike, *, host: str = "127.0.0.1", port: int = 8000,
          public_url: str | None = None, context_id: str | None = None) -> None:
    """Serve the app for ``study_path`` into the corpus at ``corpus_dir`` until interrupted (Ctrl+C).

    ``public_url`` is the address subjects open, when it differs from ``http://host:port`` (a proxy).

    Raises:
        InvalidInput: the study file has problems, or has no context ``context_id``.
        CorpusNotFound: there is no corpus at ``corpus_dir``.
    """
    from collect.study import load_study
    from corpus.store import Corpus

    study = load_study(study_path)
    study.context(context_id)
    Corpus(corpus_dir).require()
    server = _server_class()(app_command(study_path, corpus_dir, context_id=context_id), host=host, port=port,
                             title=f"trb-collect · {study.title}", public_url=public_url)
    server.serve()


def _server_class():
    """textual-serve's server, with the browser cookie: set with the page, passed to each connection's app."""
    import asyncio
    import logging

    from aiohttp import web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server, to_int

    @web.middleware
    async def browser_cookie(request: web.Request, handler):
        response = await handler(request)
        if request.path == "/" and not _KEY.match(request.cookies.get(BROWSER_COOKIE, "")):
            response.set_cookie(BROWSER_COOKIE, secrets.token_hex(16), httponly=True, samesite="Strict",
                                max_age=30 * 24 * 3600)
        return response

    class CollectServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(browser_cookie)
            return app

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's own (1.1), but the app is told which browser it runs in."""
            key = request.cookies.get(BROWSER_COOKIE, "")
            command = self.command + (f" --browser {key}" if _KEY.match(key) else "")
            websocket = web.WebSocketResponse(heartbeat=15)
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            app_service = None
            try:
                await websocket.prepare(request)
                app_service = AppService(command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                         close=websocket.close, download_manager=self.download_manager,
                                         debug=self.debug)
                await app_service.start(width, height)
                try:
                    await self._process_messages(websocket, app_service)
                finally:
                    await app_service.stop()
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:
                logging.getLogger("textual-serve").exception(error)
            finally:
                if app_service is not None:
                    await app_service.stop()
            return websocket

    return CollectServer
