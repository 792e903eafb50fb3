# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the demo needs only the base install: optional extras (inspect, ray) never enter it
DEMO_STAMP := $(VENV)/.installed-base

.PHONY: demo test lint install bench clean browser

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml setup.py ledger/_native.c | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,ray]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml setup.py ledger/_native.c | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/vledger demo

# The report test renders the HTML in Debian's headless Chromium; install it where we can
# (CI runs as root). If it cannot be had, that test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) ; } || \
	  echo "chromium not installed: the report rendering test will skip"

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .vledger
