"""No module of the toolkit's packages is over 800 lines without a reason written at its top (farm-studio's rule):
a long module is where a newcomer gets lost, so one that stays long says why, in its first lines."""

from __future__ import annotations

from pathlib import Path

from tests_paths import ROOT

PACKAGES = ("schemas", "toolkit", "corpus", "annotate", "trb", "tui", "collect", "pipeline", "environments", "simworld")
MAX_LINES = 800
#: What a long module's docstring says, within its first lines, followed by the reason.
REASON = "Why this module is long:"


def long_without_reason(root: Path, packages) -> list[str]:
    out = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            if len(lines) > MAX_LINES and not any(REASON in line for line in lines[:40]):
                out.append(f"{path.relative_to(root)} ({len(lines)} lines)")
    return out


def test_no_module_over_800_lines_without_a_reason_at_its_top():
    found = long_without_reason(ROOT, PACKAGES)
    assert not found, f"modules over {MAX_LINES} lines without '{REASON} ...' in their first 40 lines: {found}"


def test_the_rule_catches_a_long_module_and_accepts_one_that_says_why(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "pkg" / "short.py").write_text('"""A module."""\nx = 1\n', encoding="utf-8")
    (tmp_path / "pkg" / "long.py").write_text('"""A module."""\n' + body + "\n", encoding="utf-8")
    (tmp_path / "pkg" / "said.py").write_text(f'"""A module.\n\n{REASON} a reason.\n"""\n' + body + "\n",
                                              encoding="utf-8")
    assert long_without_reason(tmp_path, ["pkg"]) == [f"pkg/long.py ({MAX_LINES + 1} lines)"]
