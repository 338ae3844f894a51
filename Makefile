# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# torch's CPU build must be installed before anything that depends on torch: an unpinned torch
# pulls a multi-GB CUDA build. Override TORCH_SPEC for other machines.
TORCH_SPEC ?= torch==2.13.0
# pytest-xdist workers for `make test` (auto: one per core; 0: in this process)
PYTEST_WORKERS ?= auto

.PHONY: demo test lint typecheck pytest install install-dev bench clean browser

$(VENV)/.core: pyproject.toml
	@echo "installing duetflow and its dependencies into $(VENV) (first time: a few minutes)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --progress-bar on --upgrade pip
	$(PIP) install --progress-bar on -e .
	touch $@

$(VENV)/.dev: pyproject.toml $(VENV)/.core
	$(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q -e ".[dev,tts,dask,export,llm,quality,fast]"
	touch $@

install: $(VENV)/.core
install-dev: $(VENV)/.dev

demo: $(VENV)/.core
	$(VENV)/bin/duetflow demo --dest ./duetflow-demo

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: $(VENV)/.dev
	$(VENV)/bin/mypy

# The report test loads the HTML in a real headless Chromium (Debian package).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "warning: could not install chromium; the browser test will fail"; }

pytest: $(VENV)/.dev browser
	PREFECT_SERVER_ANALYTICS_ENABLED=false $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=15

test: lint typecheck pytest

bench: $(VENV)/.dev
	$(PY) bench/run_all.py

clean:
	rm -rf duetflow-demo .pytest_cache .mypy_cache .ruff_cache
