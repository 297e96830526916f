"""Where each key of a TOML file is, so an error can name FILE:LINE (tomllib gives values, not positions)."""

from __future__ import annotations

import re

__all__ = ["TomlLines"]


class TomlLines:
    """Where each key of a TOML file is: (table path, key) -> line (1-based). Tables of arrays are indexed."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")

    def __init__(self, text: str):
        self.at: dict[tuple[str, str], int] = {}
        self.tables: dict[str, int] = {}
        counts: dict[str, int] = {}
        path = ""
        in_string = None
        for n, line in enumerate(text.splitlines(), 1):
            if in_string:
                if in_string in line:
                    in_string = None
                continue
            m = self._HEADER.match(line)
            if m:
                name = m.group(2).replace('"', "").strip()
                if m.group(1) == "[[":
                    k = counts.get(name, 0)
                    counts[name] = k + 1
                    path = f"{name}[{k}]"
                else:
                    path = name
                self.tables.setdefault(path, n)
                continue
            m = self._KEY.match(line)
            if m:
                self.at.setdefault((path, m.group(1)), n)
                rest = line.split("=", 1)[1]
                for quote in ('"""', "'''"):
                    if rest.count(quote) == 1:
                        in_string = quote

    def line(self, table: str, key: str | None = None) -> int | None:
        if key is not None and (table, key) in self.at:
            return self.at[(table, key)]
        return self.tables.get(table)
