"""--skip-label-studio skips the Label Studio tests locally, and is refused under CI."""

import os
import subprocess
import sys

from tests_paths import ROOT

TARGET = "tests/annotate/test_annotate_label_studio.py"


def _pytest(*args, ci: bool):
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TRB_SKIP_LABEL_STUDIO")}
    env["TRB_LS_TEST_BACKENDS"] = "sqlite,postgresql"
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TARGET, *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_skip_flag_skips_label_studio_tests_locally():
    r = _pytest("--skip-label-studio", ci=False)
    # its 4 tests, each on both back ends (SQLite and PostgreSQL)
    assert r.returncode == 0 and "8 skipped" in r.stdout, r.stdout + r.stderr


def test_skip_flag_is_refused_in_ci():
    r = _pytest("--skip-label-studio", ci=True)
    assert r.returncode != 0 and "refused when CI is set" in r.stdout + r.stderr
