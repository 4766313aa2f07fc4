# One-command entry points for a fresh machine (Linux/macOS, Python 3.11+).
#   make reproduce - the main job: every notebook with the quick profile + the report (CPU, nothing downloaded)
#   make demo      - a one-second check: expert and random policies on every evaluation split
#   make test      - lint + the test suite (what CI runs)
#   make test-fast - the suite without the tests marked slow (whole notebooks, benchmarks end to end, kills)
#   make browser-check - a smoke reproduce opened in JupyterLab and Chromium headless (needs a Chromium:
#                    apt-get install chromium; CI runs it after make test: about 4.5 minutes on 2 cores)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch, installed first so that pip does not pull a multi-GB CUDA build.
# On a GPU machine: make TORCH_SPEC=torch  (or install the CUDA build of your choice first).
TORCH_SPEC ?= torch==2.13.0

.PHONY: venv extras reproduce demo test test-fast lint bench browser-check clean

# pip's own progress (not --quiet), and a line every 20 s while pip installs without a word: a fresh
# install takes minutes, and a silent terminal looks hung
PIP := bash -c 'while sleep 20; do echo "  ... pip is still installing"; done & t=$$!; $(BIN)/pip install --progress-bar on "$$@"; rc=$$?; kill $$t; exit $$rc' pip
$(BIN)/rspo: pyproject.toml constraints.txt
	@echo "creating $(VENV): torch ($(TORCH_SPEC)), then the kit with its dev extras (a few minutes, once)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) "$(TORCH_SPEC)"
	$(PIP) -e ".[dev]" -c constraints.txt
	touch $(BIN)/rspo

venv: $(BIN)/rspo

# optional extras into .venv, e.g. make extras EXTRAS=alfworld (docs/alfworld-parity.md); CI: EXTRAS=textworld,alfworld
EXTRAS ?= textworld
extras: venv
	$(PIP) -e ".[$(EXTRAS)]" -c constraints.txt

reproduce: venv
	$(BIN)/rspo reproduce --profile quick

demo: venv
	$(BIN)/rspo demo

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest -q

test-fast: venv
	$(BIN)/python -m pytest -q -m "not slow"

bench: venv
	$(BIN)/python benchmarks/bench_envs.py

# the executed notebooks in JupyterLab, notebook 02's widgets moved, report.html and the rendered notebooks,
# in Chromium headless; screenshots in runs/browser-check/ (CHROMIUM: the browser's executable)
CHROMIUM ?= /usr/bin/chromium
browser-check: venv
	$(PIP) -e ".[browser]"
	$(BIN)/python benchmarks/browser_check.py runs/reproduce-smoke --smoke --chromium $(CHROMIUM)

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
