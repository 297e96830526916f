"""A browser that comes back (textual-serve's "Restart", a reload) while its run is unfinished: carry on with that
run, or start as a new person; never a new subject silently beside the old draft."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.widgets import Static

from collect.recorder import Collection, DraftInfo
from collect.screens.base import CollectScreen
from toolkit.errors import ToolkitError

__all__ = ["ReturnScreen"]


class ReturnScreen(CollectScreen):
    KEYS = "c carry on · n start as a new person · ? help"
    BINDINGS = [Binding("c", "carry_on", "Carry on"), Binding("n", "new", "New person")]

    def __init__(self, draft: DraftInfo) -> None:
        super().__init__()
        self.draft = draft

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        when = self.draft.updated_at.replace("T", " ")[:16]
        yield Static(f"\n[b]A run was left unfinished in this browser[/b] ({escape(self.draft.progress)}, last saved "
                     f"{escape(when)} UTC).\n\n"
                     "  [b]c[/b]  carry on with it, from where it stopped (only if these are your answers)\n"
                     "  [b]n[/b]  start as a new person (the unfinished run is kept for the experimenter)",
                     id="body")

    def action_carry_on(self) -> None:
        app = self.app
        try:
            app.collection = Collection.resume(app.corpus, self.draft.draft_id, app.study)
        except ToolkitError as e:  # the study file changed since: the run cannot go on here
            self.query_one("#body", Static).update(f"\n[b]That run cannot go on here[/b]: {escape(e.message)}\n\n"
                                                   "  [b]n[/b]  start as a new person")
            return
        app.resumed_from = self.draft.draft_id
        app.tell_experimenter(f"subject {app.collection.subject_id} came back in the same browser and carries on "
                              f"with draft {self.draft.draft_id} ({app.collection.progress()})")
        app.go_on()

    def action_new(self) -> None:
        from collect.screens.consent import ConsentScreen

        self.app.tell_experimenter(f"a new person starts in the browser that left draft {self.draft.draft_id} "
                                   f"unfinished ({self.draft.progress}); that draft is kept")
        self.app.switch_screen(ConsentScreen())
