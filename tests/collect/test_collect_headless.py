"""The recorder is the headless core of trb-collect: the study, the recorder, the CLI and the serve module
load no Textual (the app is a UI over the recorder, never the other way round)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests_paths import ROOT


@pytest.mark.parametrize("module", ["collect.study", "collect.recorder", "collect.cli", "collect.serve", "environments"])
def test_the_core_never_loads_textual(module):
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_serve'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "", f"{module} loads {out.strip()}"
