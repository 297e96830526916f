"""The note prompt after a label key: what the label will do, then Enter saves it (with the note, if any)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Input, Static

__all__ = ["NoteScreen"]


class NoteScreen(ModalScreen[str | None]):
    """Asks for an optional note; dismisses with the note ("" for none) or None when cancelled."""

    DEFAULT_CSS = """
    NoteScreen { align: center middle; }
    NoteScreen > Vertical { width: 72; max-width: 95%; height: auto; border: round $accent;
                            background: $surface; padding: 0 1; }
    NoteScreen Static { height: auto; }
    NoteScreen #effect { color: $text-muted; }
    NoteScreen .undecided { color: $warning; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, label: str, item_id: str, effect: str = "") -> None:
        super().__init__()
        self.label = label
        self.item_id = item_id
        self.effect = effect

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"label [b]{escape(self.label)}[/b] on {escape(self.item_id)}")
            if self.effect:
                yield Static(escape(self.effect), id="effect",
                             classes="undecided" if "does not decide" in self.effect else "")
            yield Input(placeholder="note (optional) — Enter saves, Escape cancels", id="note")

    def on_mount(self) -> None:
        self.query_one("#note", Input).focus()

    @on(Input.Submitted, "#note")
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
