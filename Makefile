# Two commands on a fresh machine: `make demo` and `make test`.
# Each installs only what it needs: the demo the package alone; the tests add the dev
# tools (with the inspect_ai and OTel packages its tests read) and the optional Ray engine
# (tests/test_ray.py), as CI does. Optional extras (inspect, ray) never enter the demo.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
BUILD_INPUTS := pyproject.toml setup.py ledger/log/native.c
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint install bench clean browser crosscheck

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The package and its runtime dependencies only: what `vledger demo` uses.
$(DEMO_STAMP): $(BUILD_INPUTS) | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

# Everything `make test` runs: dev tools (pytest, hypothesis, ruff, xdist) and Ray.
$(TEST_STAMP): $(BUILD_INPUTS) | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,ray]'
	touch $(TEST_STAMP) $(DEMO_STAMP)

install: $(TEST_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/vledger demo

# The report test renders the HTML in Debian's headless Chromium; install it where we can
# (CI runs as root). If it cannot be had, that test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) ; } || \
	  echo "chromium not installed: the report rendering test will skip"

test: $(TEST_STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

# Optional, never part of `make test` or CI: compare what the repository copied or quotes
# with the reference material a workspace keeps beside it (REFERENCE), and run that
# folder's own compat check. Without the folder it says so and does nothing.
REFERENCE ?= ../shared
crosscheck: $(TEST_STAMP)
	@if [ ! -d "$(REFERENCE)" ]; then echo "crosscheck: no reference folder at $(REFERENCE) (make crosscheck REFERENCE=DIR)"; exit 0; fi; \
	  VLEDGER_CROSSCHECK="$(abspath $(REFERENCE))" $(BIN)/python -m pytest -q tests/crosscheck && \
	  if [ -x "$(REFERENCE)/compat/check" ]; then "$(REFERENCE)/compat/check"; fi

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

bench: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .vledger
