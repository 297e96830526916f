"""The documentation site's pages (docs/), as the tests that keep them in step with the code read them."""

from __future__ import annotations

from tests_paths import ROOT

DOCS = ROOT / "docs"
#: Generated from click by docs/gen_cli.py: it lists every command by construction, so the checks that the
#: documentation covers each command read the written pages only.
GENERATED = {DOCS / "reference" / "cli.md"}


def docs_text(*pages: str) -> str:
    """The text of the named pages (paths under docs/), or of every written page when none is named."""
    paths = [DOCS / p for p in pages] if pages else sorted(p for p in DOCS.rglob("*.md") if p not in GENERATED
                                                            and "examples" not in p.relative_to(DOCS).parts)
    return "\n".join(p.read_text(encoding="utf-8") for p in paths)
