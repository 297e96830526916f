"""A one-line text answer in which ``?`` opens the help instead of being typed (so ``?`` helps on every screen)."""

from __future__ import annotations

from textual.widgets import Input

__all__ = ["AnswerInput"]


class AnswerInput(Input):
    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key != "question_mark" and super().check_consume_key(key, character)
