"""The counterfactuals of one step: each r' as a diff against r_t, its origin, flags, author and Φ(r')."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Footer, Static

from corpus.browse import Counterfactual, SessionDetail, Slots, StepView
from tui.screens.session import slot_value
from tui.widgets.phi_bars import PhiBars

__all__ = ["CounterfactualsScreen", "diff_text"]


def diff_text(r: Slots | None, rp: Slots) -> Text:
    """r' slot by slot against r_t: changed slots as ``- r_t`` / ``+ r'``, the rest dimmed."""
    before = dict(r.items()) if r is not None else {}
    w = max(len(n) for n in [*before, *dict(rp.items())]) + 1
    text = Text()
    for name, value in rp.items():
        old = before.get(name)
        if r is not None and old == value:
            text.append(f"  {name:<{w}}{slot_value(value)}\n", style="dim")
            continue
        text.append(f"- {name:<{w}}{slot_value(old)}\n", style="red")
        text.append(f"+ {name:<{w}}{slot_value(value)}\n", style="green")
    for name, value in before.items():  # slots r_t has and r' lacks
        if name not in dict(rp.items()):
            text.append(f"- {name:<{w}}{slot_value(value)}\n", style="red")
    return text


def _head(cf: Counterfactual) -> Text:
    text = Text()
    text.append(cf.cf_id, style="bold")
    text.append(f"  {cf.origin}")
    if cf.paired_session_id:
        text.append(f" (pair {cf.paired_session_id})")
    flags = [f for f, on in (("adversarial", cf.adversarial), ("ood", cf.ood)) if on]
    if flags:
        text.append("  " + " ".join(flags), style="bold magenta")
    text.append(f"\nby {cf.author}", style="dim")
    if cf.phi_n:
        text.append(f" · Φ from {cf.phi_n} annotator(s)", style="dim")
    return text


class CounterfactualsScreen(Screen):
    DEFAULT_CSS = """
    CounterfactualsScreen #title { height: auto; max-height: 2; background: $primary-background; padding: 0 1; }
    CounterfactualsScreen #list { height: 1fr; padding: 0 1; }
    CounterfactualsScreen .cf { height: auto; margin-bottom: 1; }
    CounterfactualsScreen Static { height: auto; }
    """
    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, detail: SessionDetail, step: StepView) -> None:
        super().__init__()
        self.detail = detail
        self.step = step

    def compose(self) -> ComposeResult:
        cfs = self.detail.counterfactuals.get(self.step.t, [])
        yield Static(f"session [b]{escape(self.detail.session_id)}[/b] · t = {self.step.t} · "
                     f"{len(cfs)} counterfactual(s) · taken: {escape(self.step.action)}", id="title")
        with VerticalScroll(id="list"):
            for cf in cfs:
                with Vertical(classes="cf"):
                    yield Static(_head(cf))
                    yield Static(diff_text(self.step.r, cf.r_prime))
                    if cf.phi_type == "text":
                        yield Static(Text(f"Φ(r') text: {cf.phi_text}", style="italic"))
                    else:
                        yield PhiBars(cf.phi_probs, taken=self.step.action, planned=cf.r_prime.planned_next)
        yield Footer()

    def action_back(self) -> None:
        self.app.pop_screen()
