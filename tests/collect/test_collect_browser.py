"""The browser path: ``trb-collect serve`` (textual-serve) on a free port, opened in a real headless Chromium.

textual-serve's page is an xterm.js terminal drawn on a canvas; what it draws arrives as the terminal output
of the app process over the page's websocket, so the test reads the frames the page received (escape
sequences stripped) to know what was drawn, presses keys on the page, and keeps a screenshot. Textual sends
only what changed, so the test waits for text that appears whole (a new line), not for a changed digit.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from collect_helpers import BURST_GOAL, CONSENT_LINE, burst_keys_lost, drafts, store_rows
from tests_paths import ROOT

pytestmark = pytest.mark.browser

_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(study_path, corpus_dir, tmp_path):
    port = _free_port()
    log = open(tmp_path / "serve.log", "w")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "collect.cli", "serve", str(study_path), "--corpus", str(corpus_dir),
                             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "trb-collect serve did not listen within 60 s"
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/", tmp_path / "serve.log"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


class Screen:
    """What the page's terminal was sent, as text."""

    def __init__(self, page):
        self.page = page
        self.frames: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        self.frames.append(payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload)

    @property
    def text(self) -> str:
        return _ESCAPES.sub("", "".join(self.frames))

    def wait_for(self, words: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while words not in self.text:
            assert time.monotonic() < deadline, f"{words!r} never reached the page"
            self.page.wait_for_timeout(100)


def test_a_subject_in_a_browser_sees_the_consent_steps_and_leaves_a_draft_told_in_their_words(server, page, corpus_dir, tmp_path):
    url, log = server
    screen = Screen(page)
    page.goto(url)
    screen.wait_for(CONSENT_LINE.split(".")[0])
    assert "Do you agree to take part" in screen.text and "before the study" in screen.text
    page.wait_for_timeout(300)  # the frame is drawn on the next animation frame
    shot = tmp_path / "consent.png"
    page.screenshot(path=str(shot))
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert shot.stat().st_size > 10_000 and pixels.shape == (800, 1280)
    assert pixels.std() > 10 and (pixels > 128).mean() > 0.01  # text drawn on the dark background, not blank

    page.click("#terminal")
    page.keyboard.press("y")
    screen.wait_for("never under your name")  # the subject id screen (the consent text names the id too)
    page.keyboard.press("Enter")
    screen.wait_for("What are you trying to do?")
    page.keyboard.type("reach E2")
    for key in ("Enter", "4", "Enter", "ArrowRight", "ArrowRight", "Enter", "4", "Enter"):
        page.keyboard.press(key)  # no pause between keys: each is applied, in order (collect.keys)
    screen.wait_for("After your move (right)")  # (Textual redraws only what changed: the header's "2" alone)
    [(draft_id, draft)] = drafts(corpus_dir).items()
    assert re.fullmatch(r"mini-subj-[0-9a-f]{8}", draft_id) and draft["consent_ref"] == "consent/tests/mini-v1"
    assert draft["sessions"][0]["steps"] == [
        {"r": {"goal": "reach E2", "planned_next": "right", "confidence": 0.55, "caused_by_self": None},
         "action": "right"}]

    page.wait_for_timeout(300)
    page.keyboard.press("Control+q")  # the leave dialog speaks to the subject; the commands go to the server's log
    screen.wait_for("Leave the study now?")
    page.wait_for_timeout(300)
    dialog = screen.text[screen.text.rindex("Leave the study now?"):]
    assert "kept safe" in " ".join(dialog.split()) and "trb-collect" not in dialog and "--resume" not in dialog
    page.keyboard.press("y")  # the subject leaves: that app process ends, the draft stays
    deadline = time.monotonic() + 30
    while "kept as draft" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    logged = " ".join(log.read_text().split())
    assert f"kept as draft {draft_id}" in logged and f"--resume {draft_id}" in logged  # the experimenter's
    assert f"started study mini: draft {draft_id} (resume it with" in logged  # written at once, at the start
    assert list(drafts(corpus_dir)) == [draft_id]
    assert store_rows(corpus_dir, "SELECT count(*) FROM sessions") == [(0,)]  # nothing ingested half


KEYS = [*BURST_GOAL, "Enter", "4", "Enter", "ArrowRight", "ArrowRight", "ArrowRight", "Enter", "4", "Enter"]


def test_a_50_key_burst_in_the_browser_loses_nothing_and_restart_offers_the_run_back(server, page, corpus_dir):
    url, log = server
    screen = Screen(page)
    page.goto(url)
    screen.wait_for(CONSENT_LINE.split(".")[0])
    page.wait_for_timeout(300)
    page.click("#terminal")
    page.keyboard.press("y")
    screen.wait_for("never under your name")  # the subject id screen (the consent text names the id too)
    page.keyboard.press("Enter")
    screen.wait_for("What are you trying to do?")
    page.wait_for_timeout(300)
    assert len(KEYS) == 50
    for key in KEYS:  # one after another, no pause: a burst
        page.keyboard.press(key)
    screen.wait_for("After your move (right)")
    [(draft_id, draft)] = drafts(corpus_dir).items()
    [step] = draft["sessions"][0]["steps"]
    goal, plan, conf, move = step["r"]["goal"], step["r"]["planned_next"], step["r"]["confidence"], step["action"]
    lost = burst_keys_lost(goal, plan, conf, move)
    assert lost == 0, f"{lost} of 50 keys lost: {step}"
    assert draft["browser"] and re.fullmatch(r"[0-9a-f]{32}", draft["browser"])

    page.wait_for_timeout(300)
    page.keyboard.press("Control+q")  # the subject leaves mid-run; the page offers "Restart"
    screen.wait_for("Leave the study now?")
    page.wait_for_timeout(300)
    page.keyboard.press("y")
    page.wait_for_selector("text=Restart", state="visible", timeout=30_000)
    again = Screen(page)
    page.click("text=Restart")  # the same browser: its unfinished run is offered back, not a new subject
    again.wait_for("left unfinished in this browser")
    assert "session 1 of 2 · step 2 of 3" in again.text
    page.wait_for_timeout(300)
    page.click("#terminal")
    page.keyboard.press("c")
    again.wait_for("step 2 of 3")
    page.wait_for_timeout(300)
    assert list(drafts(corpus_dir)) == [draft_id]  # no second subject beside it
    assert "Do you agree to take part" not in again.text  # no new consent: the run goes on
