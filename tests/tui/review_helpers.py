"""Driving the review app in tests: wait for its workers, read its widgets, read the store with plain DuckDB."""

from __future__ import annotations

from factories import store_rows  # noqa: F401 - the tests import it from here


async def settle(pilot) -> None:
    """Wait until every worker has finished and the screen has processed what they posted."""
    from textual.worker import WorkerCancelled

    for _ in range(5):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:  # a load the app replaced by a newer one (exclusive workers): the newer one counts
            pass
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            break
    await pilot.pause()


def table_rows(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def status_text(screen) -> str:
    return str(screen.query_one("#status").render())


def drive(test):
    """Run an ``async def`` test on a fresh event loop (no pytest asyncio plugin needed)."""
    import asyncio
    import functools

    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def said(app) -> str:
    """Everything the app has told the user just now: its notifications and the screen's status line."""
    status = ""
    if app.screen.query("#status"):
        status = str(app.screen.query_one("#status").render())
    return "\n".join([*(n.message for n in app._notifications), status])


async def open_queue(pilot):
    """From the sessions list, the review queue (``a``), settled: its screen."""
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    return pilot.app.screen
