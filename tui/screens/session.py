"""One session: the steps as a timeline beside what the agent saw, its r_t, its action and the outcome.

Attribution items are marked on the timeline; on one, ``s``/``e``/``u`` label it and ``z``
undoes the reviewer's latest label on it. ``PgDn``/``PgUp`` scroll the step's detail.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from corpus.browse import AttributionItem, ItemLabel, SessionDetail, Slots, StepView, session_detail
from corpus.labels import UNDO_METHOD
from corpus.review import describe_position, short_time
from tui.widgets.timeline import DETAIL_KEYS, STATUS_MARK, Timeline

__all__ = ["SessionScreen", "step_text", "slot_value"]


def slot_value(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _slots_text(text: Text, slots: Slots | None) -> None:
    if slots is None:
        text.append("  (no r_t recorded at this step)\n", style="dim")
        return
    width = max(len(name) for name, _ in slots.items()) + 1
    for name, value in slots.items():
        text.append(f"  {name:<{width}}", style="cyan")
        text.append(f"{slot_value(value)}\n")


def label_lines(text: Text, labels: list[ItemLabel], indent: str = "    ") -> None:
    """One line per label: role, who, the label, its revision and time, the note."""
    for lb in labels:
        text.append(f"{indent}{lb.role:<11} {lb.annotator_id:<10} ", style="dim")
        text.append(f"{lb.label or '—'}", style="bold")
        undo = " undo" if lb.method == UNDO_METHOD else ""
        text.append(f"  rev {lb.revision}{undo} · {short_time(lb.created_at)}", style="dim")
        if lb.rationale:
            text.append(f" — {lb.rationale}", style="italic")
        text.append("\n")


def _item_text(text: Text, item: AttributionItem, selected: bool, reviewer: str | None) -> None:
    mark, style = STATUS_MARK[item.status]
    text.append("▶ " if selected else "  ", style="bold yellow")
    text.append(f"{mark} ", style=style)
    text.append(item.item_id, style="bold" if selected else "")
    text.append(f"  design {item.design_label} · {item.status.replace('_', ' ')}")
    if item.disagreement:
        text.append(" · annotators disagree", style="bold red")
    text.append("\n")
    if item.decision is not None:
        text.append("    decided: ", style="bold green")
        text.append(f"{describe_position(item.decision, reviewer)}\n")
    elif item.labels:
        text.append("    undecided (no adjudication, and no reviewer said self or exogenous)\n", style="yellow")
    if item.note:
        text.append(f"    {item.note}\n", style="dim")
    label_lines(text, item.labels)


def step_text(detail: SessionDetail, step: StepView, item_index: int = 0, reviewer: str | None = None) -> Text:
    """What the detail pane shows for ``step``: observation, r_t slots, action, outcome, items, counterfactuals."""
    text = Text()
    text.append(f"t = {step.t}\n", style="bold")
    text.append("saw      ", style="bold")
    text.append(f"{step.observation}\n")
    text.append("r_t\n", style="bold")
    _slots_text(text, step.r)
    text.append("action   ", style="bold")
    for a in step.action_space or [step.action]:
        if a == step.action:
            text.append(f"[{a}]", style="bold reverse")
        else:
            text.append(a, style="dim")
        text.append(" ")
    if step.action_space and step.action not in step.action_space:
        text.append(f"[{step.action}] (outside the action space)", style="bold red")
    text.append("\n")
    text.append("outcome  ", style="bold")
    text.append(f"{step.outcome or '—'}\n")
    items = detail.items_at(step.t)
    if items:
        text.append(f"attribution items ({len(items)})  s self · e exogenous · u unsure · z undo"
                    f"{' · i next' if len(items) > 1 else ''}\n", style="bold")
        for i, item in enumerate(items):
            _item_text(text, item, i == item_index % len(items), reviewer)
    n_cf = len(detail.counterfactuals.get(step.t, []))
    if n_cf:
        text.append(f"counterfactuals: {n_cf} (c to view)\n", style="bold")
    return text


_LABEL = Binding.Group("Label")



class SessionScreen(Screen):
    """Timeline on the left, the selected step on the right."""

    DEFAULT_CSS = """
    SessionScreen #title { height: auto; max-height: 2; background: $primary-background; padding: 0 1; }
    SessionScreen #body { height: 1fr; }
    SessionScreen Timeline { width: 42%; min-width: 30; }
    SessionScreen #detail { width: 1fr; padding: 0 1; }
    SessionScreen #step { height: auto; }
    SessionScreen #status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("s", "label('self')", "self", group=_LABEL),
        Binding("e", "label('exogenous')", "exogenous", group=_LABEL),
        Binding("u", "label('unsure')", "unsure", group=_LABEL),
        Binding("z", "undo", "Undo"),
        Binding("i", "next_item", "Item"),
        Binding("m", "next_marked", "Marked"),
        Binding("c", "counterfactuals", "Cf"),
        Binding("pagedown", "scroll_detail(1)", "detail down", key_display="PgDn", group=DETAIL_KEYS),
        Binding("pageup", "scroll_detail(-1)", "detail up", key_display="PgUp", group=DETAIL_KEYS),
    ]

    def __init__(self, session_id: str, t: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.start_t = t
        self.detail: SessionDetail | None = None
        self.item_index = 0

    def compose(self) -> ComposeResult:
        yield Static(f"session {escape(self.session_id)}", id="title")
        with Horizontal(id="body"):
            yield Timeline(id="timeline")
            with VerticalScroll(id="detail", classes="pane"):
                yield Static("loading…", id="step")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).focus()
        self.load()

    @work(thread=True, exclusive=True, group="session-detail")
    def load(self) -> None:
        app = self.app
        try:
            detail = session_detail(app.corpus, self.session_id, rule=app.split_rule)
        except Exception as e:  # noqa: BLE001 - shown, never a crash
            app.call_from_thread(self.set_status, f"cannot read the corpus: {getattr(e, 'message', e)}")
            return
        app.call_from_thread(self.show, detail)

    def show(self, detail: SessionDetail | None) -> None:
        if detail is None:
            self.query_one("#step", Static).update(f"no session {self.session_id!r} in this corpus")
            return
        keep_t = self.selected_t if self.detail is not None else self.start_t
        self.detail = detail
        self.query_one("#title", Static).update(
            f"session [b]{escape(detail.session_id)}[/b] · {detail.source_kind} · {detail.split} · "
            f"{escape(detail.context_id)} · subject {escape(detail.subject_id)}")
        timeline = self.query_one(Timeline)
        timeline.show(detail, keep_t)
        self.refresh_step()

    @property
    def selected_t(self) -> int | None:
        return self.query_one(Timeline).selected_t

    def current_step(self) -> StepView | None:
        t = self.selected_t
        if self.detail is None or t is None:
            return None
        return next((s for s in self.detail.steps if s.t == t), None)

    def current_item(self) -> AttributionItem | None:
        step = self.current_step()
        if step is None:
            return None
        items = self.detail.items_at(step.t)
        return items[self.item_index % len(items)] if items else None

    def refresh_step(self) -> None:
        step = self.current_step()
        if step is not None:
            self.query_one("#step", Static).update(step_text(self.detail, step, self.item_index, self.app.reviewer))

    @on(DataTable.RowHighlighted, "#timeline")
    def _step_changed(self, event: DataTable.RowHighlighted) -> None:
        self.item_index = 0
        self.refresh_step()

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    # -- actions -----------------------------------------------------------------------------------

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_scroll_detail(self, direction: int) -> None:
        pane = self.query_one("#detail", VerticalScroll)
        if direction > 0:
            pane.scroll_page_down(animate=False)
        else:
            pane.scroll_page_up(animate=False)

    def action_next_item(self) -> None:
        step = self.current_step()
        n = len(self.detail.items_at(step.t)) if step is not None else 0
        if n < 2:
            self.app.cannot("no other attribution item at this step" if n else
                            "no attribution item at this step (m: next step with one)")
            return
        self.item_index += 1
        self.refresh_step()

    def action_next_marked(self) -> None:
        if self.detail is None:
            return
        marked = sorted({i.t for i in self.detail.items})
        if not marked:
            self.app.cannot("this session has no attribution items")
            return
        t = self.selected_t or 0
        later = [m for m in marked if m > t]
        if not later and marked == [t]:
            self.app.cannot(f"t = {t} is the only step with an attribution item")
            return
        if not later:
            self.app.say(f"no item after t = {t}: back to the first, t = {marked[0]}")
        self.query_one(Timeline).select_step((later or marked)[0])

    def action_label(self, label: str) -> None:
        item = self.current_item()
        if item is None:
            self.app.cannot("no attribution item at this step (m: next step with one)")
            return
        self.app.label_item(item.item_id, label, labels=item.labels, done=lambda _ok: self.load())

    def action_undo(self) -> None:
        item = self.current_item()
        if item is None:
            self.app.cannot("no attribution item at this step: nothing to undo")
            return
        self.app.undo_item(item.item_id, labels=item.labels, done=lambda _ok: self.load())

    def action_counterfactuals(self) -> None:
        step = self.current_step()
        if step is None or not self.detail.counterfactuals.get(step.t):
            self.app.cannot("no counterfactuals at this step")
            return
        from tui.screens.counterfactuals import CounterfactualsScreen

        self.app.push_screen(CounterfactualsScreen(self.detail, step))
