"""Driving the subject app in tests: a small study, the screen as text, the store and drafts read directly."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

from factories import store_rows  # noqa: F401 - the tests import it from here

#: One pair (two sessions of three steps: the goals are three moves from the start, the budget three steps),
#: revisions offered at steps 1 and 2: four revision screens.
SMALL_STUDY = '''\
[study]
id = "mini"
title = "Mini: three steps on a windy grid"
collector = "TRB tests"
licence = "CC-BY-4.0"
pairs_per_subject = 1
revise_steps = [1, 2]
seed = 3

[consent]
ref = "consent/tests/mini-v1"
text = """
You will walk a small grid in two short sessions. Before every move you say what you are
trying to do, what you plan to do next, how sure you are, and whether the last change was
your own doing.

What is recorded: your answers, your moves and a pseudonymous subject id; never your name.
"""

[environment]
name = "grid"

[[environment.tasks]]
id = "walk"
stimulus = "open-7x7-breeze"
start = "B2"
goal = "E2"
paired_goal = "B5"
budget = 3

[[contexts]]
id = "ctx-mini-en"
stimulus_set = "open-7x7-breeze"
subject_population = "test subjects"
language = "en"
'''

CONSENT_LINE = "You will walk a small grid in two short sessions."


def write_study(directory: Path, text: str = SMALL_STUDY, name: str = "mini.toml") -> Path:
    path = Path(directory) / name
    path.write_text(text, encoding="utf-8")
    return path


def screen_lines(app) -> list[str]:
    """The screen as the subject sees it, one string per terminal row (through the compositor's strips)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def region_text(app, widget) -> str:
    """The words the screen shows inside ``widget``'s region (beside a map, say), its lines joined by spaces."""
    r = widget.region
    lines = screen_lines(app)[r.y:r.y + r.height]
    return " ".join(" ".join(line[r.x:r.x + r.width] for line in lines).split())


def screen_text(app) -> str:
    return "\n".join(screen_lines(app))


def drafts(corpus_dir: Path) -> dict[str, dict]:
    """Every draft file beside the corpus, read as JSON: {draft id: content}."""
    folder = Path(corpus_dir) / ".trb-collect" / "drafts"
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def drive(test):
    """Run an ``async def`` test on a fresh event loop (no pytest asyncio plugin needed)."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def play_sessions(study, corpus, subject_id: str, *, sessions: int | None = None):
    """A run made through the recorder alone (no screen): consent, then every step of the first ``sessions``
    sessions (default: all) walked toward the goal; the :class:`Collection`, its draft written."""
    from collect.recorder import Collection, RInput

    c = Collection.start(study, corpus, consent=True, subject_id=subject_id)
    moves = {0: "right", 1: "up"}
    while c.collecting and (sessions is None or c.index < sessions):
        move = moves[c.index % 2]
        first = c.step_number == 1
        c.act(RInput(f"reach {c.session.goal}", move, 0.7, None if first else 0.6), move)
    return c


def store_counts(corpus_dir: Path) -> dict[str, int]:
    """Row counts of every store table, read with plain DuckDB."""
    tables = [r[0] for r in store_rows(corpus_dir, "SELECT table_name FROM information_schema.tables")]
    return {t: store_rows(corpus_dir, f'SELECT count(*) FROM "{t}"')[0][0] for t in tables}


#: 41 characters, a "?" among them: with Enter, 4, Enter, → → →, Enter, 4, Enter a whole step in 50 keys.
BURST_GOAL = "reach E2? yes: right, then right (again)!"


def _lcs(a: str, b: str) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def burst_keys_lost(goal: str, plan: str, conf: float, move: str) -> int:
    """Of the 50 keys of a step typed as one burst (:data:`BURST_GOAL`, then plan right, confidence 0.6, move
    right), how many left no trace: goal characters missing (or out of order), and the keys of each field whose
    value is not what they set (plan 2 keys, confidence 4, move 2)."""
    return (len(BURST_GOAL) - _lcs(goal, BURST_GOAL) + 2 * (plan != "right") + 4 * (conf != 0.6)
            + 2 * (move != "right"))
