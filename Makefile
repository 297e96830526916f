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
	touch $(STAMP)

demo: install
	rm -rf $(DEMO_DIR)
	$(BIN)/trb-corpus init $(DEMO_DIR)/corpus
	$(BIN)/trb-corpus simulate --sessions 2000 --seed 1 -o $(DEMO_DIR)/simulated.jsonl.gz
	$(BIN)/trb-corpus validate $(DEMO_DIR)/simulated.jsonl.gz examples/7f3a/7f3a.jsonl
	$(BIN)/trb-corpus ingest --corpus $(DEMO_DIR)/corpus $(DEMO_DIR)/simulated.jsonl.gz examples/7f3a/7f3a.jsonl
	$(BIN)/trb-corpus stats --corpus $(DEMO_DIR)/corpus
	$(BIN)/trb-corpus release --corpus $(DEMO_DIR)/corpus --version 0.1.0 --kind smoke
	$(BIN)/trb-corpus verify $(DEMO_DIR)/corpus/releases/0.1.0
	@echo "SMOKE TEST: simulated and illustrative data only; no TRB score can be claimed from it (spec section 6)." >&2

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/release.py

clean:
	rm -rf $(VENV) $(DEMO_DIR)
