"""A scripted subject: plays the subject's app through Textual's Pilot, key by key (the tests and
``bench/collect.py`` use it). Every answer goes in through the keys a person presses."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Answer", "type_text", "settle", "agree", "answer_step", "revise_step", "skip_revision", "go_on"]


@dataclass(frozen=True)
class Answer:
    """What the subject states and does at a step: ``plan`` and ``move`` are 1-based option numbers; the sliders
    are set in 5 % presses from 50 % (the first → sets 50 %), so ``confidence=4`` is 65 %."""

    goal: str | None  # typed over the prefilled goal; None keeps it
    plan: int
    move: int
    confidence: int = 4
    cause: int = 2


async def settle(pilot) -> None:
    """Wait until every worker is done and the screen has processed what they posted."""
    for _ in range(5):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            break
    await pilot.pause()


async def type_text(pilot, text: str) -> None:
    await pilot.press(*("space" if ch == " " else ch for ch in text))


async def agree(pilot, subject_id: str | None = None) -> None:
    """Consent (``y``), then the subject id (typed over the random one when given), Enter."""
    await pilot.press("y")
    await pilot.pause()
    if subject_id is not None:
        await pilot.press("end", "ctrl+u")  # to the end, then delete everything left of it: the Input is empty
        await type_text(pilot, subject_id)
    await pilot.press("enter")
    await settle(pilot)


async def _slider(pilot, presses: int) -> None:
    await pilot.press(*(["right"] * (presses + 1)), "enter")


async def _fill(pilot, a: Answer, *, ask_cause: bool) -> None:
    if a.goal is not None:
        await pilot.press("end", "ctrl+u")
        await type_text(pilot, a.goal)
    await pilot.press("enter", str(a.plan), "enter")
    if ask_cause:
        await _slider(pilot, a.cause)
    await _slider(pilot, a.confidence)
    await pilot.press(str(a.move))


async def answer_step(pilot, a: Answer, *, act: bool = True) -> None:
    """Fill the step's form from its first field; with ``act``, press Enter on the move (the step is taken)."""
    screen = pilot.app.screen
    await _fill(pilot, a, ask_cause=screen.last is not None)
    if act:
        await pilot.press("enter")
        await pilot.pause()


async def revise_step(pilot, plan: int, move: int) -> None:
    """On a revision screen (prefilled with what the subject said), change the plan and choose the move."""
    screen = pilot.app.screen
    await pilot.press("enter", str(plan), "enter")
    if screen.context["step"] > 1:
        await pilot.press("enter")
    await pilot.press("enter", str(move), "enter")
    await pilot.pause()


async def skip_revision(pilot) -> None:
    await pilot.press("escape")
    await pilot.pause()
    await pilot.press("y")
    await pilot.pause()


async def go_on(pilot) -> None:
    """On the screen between sessions: wait until Enter goes on (it is a screen to read), then press it."""
    import asyncio

    await asyncio.wait_for(pilot.app.screen.armed.wait(), 10)
    await pilot.press("enter")
    await pilot.pause()
