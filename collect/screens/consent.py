"""The consent screen: the study's text (scrollable), ``y`` agrees, ``n``/``q`` leaves with nothing recorded."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Static

from collect.screens.base import CollectScreen

__all__ = ["ConsentScreen", "DeclinedScreen", "reflow"]

_LIST_ITEM = re.compile(r"^\s*([-*•]|\d+[.)])\s")


def reflow(text: str) -> str:
    """The study's text with its hard line breaks joined, so it wraps at any width: paragraphs (blank lines)
    and list items (lines starting with -, *, • or 1.) keep their own lines."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        lines: list[str] = []
        for line in paragraph.splitlines():
            if lines and not _LIST_ITEM.match(line):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


class ConsentScreen(CollectScreen):
    DEFAULT_CSS = """
    ConsentScreen #consent { height: 1fr; padding: 0 1; }
    ConsentScreen #consent:focus { background: $boost; }
    ConsentScreen #question { height: auto; padding: 0 1; background: $boost; text-style: bold; }
    """
    KEYS = "↑↓ PgUp PgDn scroll · y I agree · n or q no (nothing is recorded) · ? help"
    BINDINGS = [
        Binding("y", "agree", "I agree"),
        Binding("n,q", "decline", "No"),
    ]

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        study = self.app.study
        with VerticalScroll(id="consent", can_focus=True):
            yield Static(f"[b]{escape(study.title)}[/b]\n", id="title")
            yield Static(escape(reflow(study.consent_text)), id="consent-text")
            yield Static(f"\n[dim]Collected by {escape(study.collector)} · licence {escape(study.licence)} · "
                         f"consent reference {escape(study.consent_ref)}[/dim]")
        yield Static("Do you agree to take part, as described above?   y  yes, I agree    n  no",
                     id="question")

    def on_mount(self) -> None:
        self.query_one("#consent").focus()

    def action_agree(self) -> None:
        from collect.screens.subject import SubjectScreen

        self.app.switch_screen(SubjectScreen(consent=True))

    def action_decline(self) -> None:
        self.app.switch_screen(DeclinedScreen())


class DeclinedScreen(CollectScreen):
    """No consent: nothing was recorded (no draft, no record); any key named here closes the app."""

    KEYS = "q or Enter close"
    BINDINGS = [Binding("q,enter,escape", "close", "Close")]

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static("\n[b]You did not agree, so nothing was recorded.[/b]\n\nThank you for your time. "
                     "You can close this window now (q).", id="body")

    def action_close(self) -> None:
        from collect.app import Outcome

        self.app.exit(Outcome("declined", "no consent: nothing was recorded"))
