"""``trb-collect serve``: the subject's app in a browser, through textual-serve.

textual-serve (``textual_serve.server.Server``) is an aiohttp server: ``/`` is a page with an
xterm.js terminal; each browser connection opens the websocket ``/ws``, and for it the server
starts the command given here in a shell of its own (``TEXTUAL_DRIVER`` set to Textual's web
driver) and relays keys and screen between the two. So every connection is its own app process
and its own subject (a fresh random subject id, its own draft); closing the tab ends that
process, leaving its draft, as leaving the app in a terminal does.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

__all__ = ["serve", "app_command"]


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
    from textual_serve.server import Server

    from collect.study import load_study
    from corpus.store import Corpus

    study = load_study(study_path)
    study.context(context_id)
    Corpus(corpus_dir).require()
    server = Server(app_command(study_path, corpus_dir, context_id=context_id), host=host, port=port,
                    title=f"trb-collect · {study.title}", public_url=public_url)
    server.serve()
