"""The subject's app, timed: `python bench/collect.py [--subjects 5] [--study collect/studies/pilot-grid.toml]`.

Drives the real app headless (Textual's ``run_test`` at 80×24) as a scripted subject through the whole study,
key by key, once per subject, all into one fresh corpus, and reports:

- **action → next screen**: from the Enter that takes a step (the subject's move) to the first frame of the
  next screen (the next step, or the screen between sessions) rendered, p50 and p95 over every step of every
  subject. The key goes in as the terminal driver sends it (one Key event); the clock stops at the first
  ``App._display`` of the current screen after the recorder has the step (headless, the frame is rendered
  and not written to a terminal);
- **save**: from the Enter on the last revision to the save screen saying "saved", and the ingest's own
  time (``IngestReport.seconds``), per run and per session, medians.

Peers, in the same process on the same study and corpus: the recorder's ``Collection.act()`` alone (what a
step costs without the UI: the environment's step and the draft written), and ``Collection.finish()`` alone
(the ingest without the UI), on runs made through the recorder only.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "out" / "collect"

_AT = re.compile(r"You are (?:still |now )?at ([A-Z])(\d+)")
_GOAL = re.compile(r"goal is ([A-Z])(\d+)")


def policy(observation: str, last: str | None) -> str:
    """Toward the goal: columns first, then rows (a subject who reads the observation)."""
    at, goal = _AT.search(observation), _GOAL.search(observation)
    if at is None or goal is None:
        return last or "right"
    dc = ord(goal.group(1)) - ord(at.group(1))
    dr = int(goal.group(2)) - int(at.group(2))
    if dc:
        return "right" if dc > 0 else "left"
    if dr:
        return "up" if dr > 0 else "down"
    return "wait"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))]


async def _until(pilot, cond, limit: float = 60.0, poll: float = 0.0005) -> None:
    t0 = time.perf_counter()
    while not cond():
        await asyncio.sleep(poll)
        if time.perf_counter() - t0 > limit:
            raise TimeoutError("the app did not get there")


def _frames(app) -> list[float]:
    """Record when the app renders a frame of its current screen (``App._display``: in a terminal it then writes
    the frame; headless it renders it and writes nothing)."""
    frames: list[float] = []
    display = app._display

    def timed(screen, renderable) -> None:
        if renderable is not None and screen is app.screen:
            frames.append(time.perf_counter())
        display(screen, renderable)

    app._display = timed
    return frames


async def run_subject(study, corpus, subject: str) -> dict:
    from textual import events

    from collect.app import CollectApp
    from collect.screens.revision import RevisionScreen
    from collect.screens.save import SaveScreen
    from collect.screens.step import StepScreen
    from collect.scripted import agree, go_on, revise_step, settle, type_text

    actions = study.environment.start(study.task(0), goal="A1", seed=0, language="en").action_space
    key_of = {a: str(i + 1) for i, a in enumerate(actions)}
    step_s: list[float] = []
    app = CollectApp(study, corpus, subject_id=subject)
    async with app.run_test(size=(80, 24)) as pilot:
        frames = _frames(app)
        await agree(pilot)
        while isinstance(app.screen, StepScreen) or app.screen.__class__.__name__ == "BetweenScreen":
            screen = app.screen
            if not isinstance(screen, StepScreen):
                await go_on(pilot)  # a screen to read: Enter goes on after BetweenScreen.READ_SECONDS
                continue
            c = app.collection
            move = policy(c.observation, None)
            screen_step = screen.step_number
            if screen.last is None:
                await type_text(pilot, f"reach {c.session.goal}")
            await pilot.press("enter", key_of[move], "enter")
            if screen.last is not None:
                await pilot.press("right", "right", "enter")
            await pilot.press("right", "right", "right", "enter", key_of[move])
            before = len(c.session.steps) if c.collecting else None
            t0 = time.perf_counter()
            app._driver.send_message(events.Key("enter", "\r"))  # as the terminal driver delivers the key
            # the step is taken (the recorder has it) ...
            await _until(pilot, lambda b=before, s=c.session: len(s.steps) != b)
            changed = time.perf_counter()
            # ... and a frame of the next screen (the next step, or between sessions) has been rendered since
            await _until(pilot, lambda ch=changed, sc=screen, n=screen_step: frames and frames[-1] > ch and
                         (app.screen is not sc or sc.step_number != n))
            step_s.append(frames[-1] - t0)
            await pilot.pause()
        while isinstance(app.screen, RevisionScreen):
            other = int(key_of[next(a for a in actions if a != app.screen.context["r"]["planned_next"])])
            if len(app.collection.revision_items()) > 1:
                await revise_step(pilot, other, other)
                continue
            await pilot.press("enter", str(other), "enter", *(["enter"] if app.screen.context["step"] > 1 else []),
                              "enter", str(other))  # the last revision, all but its Enter
            t0 = time.perf_counter()  # the save starts at that Enter
            app._driver.send_message(events.Key("enter", "\r"))
            await _until(pilot, lambda: isinstance(app.screen, SaveScreen))
        assert isinstance(app.screen, SaveScreen)
        # polled every 5 ms: the ingest runs in a worker thread, which a busier poll would slow (the GIL)
        await _until(pilot, lambda: app.screen.state in ("saved", "busy", "failed"), poll=0.005)
        save_s = time.perf_counter() - t0
        assert app.screen.state == "saved", app.screen.status_text
        ingest_s = app.screen.ingest_seconds
        await settle(pilot)
    return {"steps": step_s, "save_s": save_s, "ingest_s": ingest_s, "sessions": len(app.collection.sessions)}


def peer(study, corpus, subject: str) -> dict:
    """The same run through the recorder alone: act() per step, then finish()."""
    from collect.recorder import Collection, RInput

    c = Collection.start(study, corpus, consent=True, subject_id=subject)
    act_s = []
    while c.collecting:
        move = policy(c.observation, None)
        r = RInput(f"reach {c.session.goal}", move, 0.65, None if c.step_number == 1 else 0.6)
        t0 = time.perf_counter()
        c.act(r, move)
        act_s.append(time.perf_counter() - t0)
    for item in c.revision_items():
        ctx = c.revision_context(item)
        other = next(a for a in ctx["action_space"] if a != ctx["r"]["planned_next"])
        c.revise(item, RInput(ctx["r"]["goal"], other, 0.5, ctx["r"]["caused_by_self"]), other)
    t0 = time.perf_counter()
    report = c.finish()
    return {"act": act_s, "finish_s": time.perf_counter() - t0, "ingest_s": report.seconds,
            "sessions": len(c.sessions)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=5)
    ap.add_argument("--study", default=str(ROOT / "collect" / "studies" / "pilot-grid.toml"))
    args = ap.parse_args()

    from collect.study import load_study
    from corpus.store import Corpus, init_corpus

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    corpus = Corpus(init_corpus(OUT / "corpus"))
    study = load_study(args.study)
    ui = [asyncio.run(run_subject(study, corpus, f"bench-ui-{i}")) for i in range(args.subjects)]
    peers = [peer(study, corpus, f"bench-peer-{i}") for i in range(args.subjects)]

    steps = [s for r in ui for s in r["steps"]]
    acts = [s for r in peers for s in r["act"]]
    n_sessions = ui[0]["sessions"]
    med = statistics.median
    print(f"study {study.id}: {args.subjects} subjects × {n_sessions} sessions, {len(steps)} steps through the UI "
          f"(80×24, headless), {len(acts)} through the recorder alone")
    print()
    print("| measure | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    print(f"| UI: action key → next screen's first frame | {1000 * med(steps):.1f} | {1000 * pct(steps, 95):.1f} |")
    print(f"| peer: Collection.act() alone | {1000 * med(acts):.2f} | {1000 * pct(acts, 95):.2f} |")
    print(f"| ratio UI / peer (p50) | {med(steps) / med(acts):.0f}x | |")
    print()
    print("| save | per run s (median) | per session s (median) |")
    print("|---|---:|---:|")
    print(f"| UI: Enter on the last revision → \"saved\" shown | {med(r['save_s'] for r in ui):.3f} | "
          f"{med(r['save_s'] / r['sessions'] for r in ui):.3f} |")
    print(f"| UI: the ingest's own time | {med(r['ingest_s'] for r in ui):.3f} | "
          f"{med(r['ingest_s'] / r['sessions'] for r in ui):.3f} |")
    print(f"| peer: Collection.finish() alone | {med(r['finish_s'] for r in peers):.3f} | "
          f"{med(r['finish_s'] / r['sessions'] for r in peers):.3f} |")


if __name__ == "__main__":
    main()
