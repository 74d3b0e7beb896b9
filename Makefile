# convlog developer tasks. `make demo` and `make test` work on a fresh clone: they
# create .venv and install the project into it when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST := $(BIN)/python -m pytest
# The suite runs on WORKERS processes (pytest-xdist): 2, the cores of the machine it
# is sized for (1,839 tests in ~8 min there, against ~15 min in one process);
# WORKERS=auto for one per core, WORKERS=0 for one process (no xdist at all).
# loadgroup: tests marked xdist_group(name) share one worker.
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadgroup

.PHONY: bench-tools bench-report screenshots docs install demo demo-acp test test-unit test-integration test-e2e lint bench bench-quick bench-peers bench-peers-quick wheel wheel-check clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)  ## create .venv with convlog (editable) and the dev tools

# The demos need only a plain install (plus the acp extra for demo-acp), not the
# development set: on a fresh clone they install just that; a .venv made by
# `make install` already has it.
$(VENV)/.demo-stamp: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ ! $(STAMP) -nt pyproject.toml ]; then $(BIN)/python -m pip install --quiet -e .; fi
	@touch $@

$(VENV)/.demo-acp-stamp: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ ! $(STAMP) -nt pyproject.toml ]; then $(BIN)/python -m pip install --quiet -e '.[acp]'; fi
	@touch $@

demo: $(VENV)/.demo-stamp  ## the main job: a scripted conversation on embedded SQLite
	$(BIN)/python -m convlog.cli.demo

demo-acp: $(VENV)/.demo-acp-stamp  ## the same restart story over ACP: host -> convlog acp -> agent, real processes
	$(BIN)/python -m convlog.cli.demo_acp

docs: $(STAMP)  ## the reference site (MkDocs Material) into site/, strict: any warning fails
	$(BIN)/python -m docs.gen_reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# pytest exits 5 when it collects no test: that is a failure here, never a pass.
# `make lint` runs first: ruff and mypy --strict fail in seconds, where the suite takes
# minutes, and CI (.ci/run: `make test`) enforces them with it.
test: $(STAMP) lint  ## ruff + mypy --strict, then the whole suite
	@$(PYTEST) $(XDIST) tests; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; \
	exit $$status

test-unit: $(STAMP)
	$(PYTEST) $(XDIST) tests/unit

test-integration: $(STAMP)
	$(PYTEST) $(XDIST) tests/integration

test-e2e: $(STAMP)
	$(PYTEST) $(XDIST) tests/e2e

# mypy cannot follow setuptools' editable import hook, and the import name `convlog`
# maps to three folders; so it checks a tree of symlinks laid out as the installed
# package is (convlog/ = adapters/*, convlog/domain, convlog/projections).
TYPECHECK := $(VENV)/typecheck
lint: $(STAMP)  ## ruff + mypy (strict)
	$(BIN)/ruff check domain projections adapters tests bench docs
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/convlog
	@for f in adapters/*; do ln -s "$(CURDIR)/$$f" $(TYPECHECK)/convlog/; done
	@ln -s "$(CURDIR)/domain" $(TYPECHECK)/convlog/domain
	@ln -s "$(CURDIR)/projections" $(TYPECHECK)/convlog/projections
	MYPYPATH=$(TYPECHECK):$(CURDIR) $(BIN)/python -m mypy -p convlog -p tests -p bench -m docs.make_screenshots -m docs.gen_reference

# The peers (OpenAI Agents SDK, LangChain, LangGraph) live in their own venv: they
# are benchmark opponents, never runtime dependencies of convlog.
VENV_BENCH := .venv-bench
BENCH_STAMP := $(VENV_BENCH)/.installed-stamp

$(BENCH_STAMP): pyproject.toml bench/requirements-peers.txt bench/peers_setup.sh
	PYTHON=$(PYTHON) VENV=$(VENV_BENCH) sh bench/peers_setup.sh

# Debian tools the benchmarks drive: wrk (the HTTP load generator) and Chromium (the
# HTML viewer's browser). Installed when missing, as root; otherwise the bench says so.
bench-tools:
	@missing=""; command -v wrk >/dev/null || missing="$$missing wrk"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

bench: $(STAMP) $(BENCH_STAMP) bench-tools  ## benchmarks (full, ~25 min): saved in bench/results, rendered into BENCHMARKS.md and the docs
	$(BIN)/python -m bench.core
	$(BIN)/python -m bench.context
	$(BIN)/python -m bench.compaction
	$(BIN)/python -m bench.memory
	$(BIN)/python -m bench.views
	$(BIN)/python -m bench.writers
	$(BIN)/python -m bench.pg_writers
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.formats
	$(BIN)/python -m bench.acp
	$(BIN)/python -m bench.html
	$(BIN)/python -m bench.replay
	$(BIN)/python -m bench.http
	$(BIN)/python -m bench.crypto
	$(BIN)/python -m bench.importers
	$(BIN)/python -m bench.watch
	$(BIN)/python -m bench.sdks
	$(VENV_BENCH)/bin/python -m bench.sdks --sdk adk
	$(VENV_BENCH)/bin/python -m bench.peers
	$(BIN)/python -m bench.report

# Quick results are saved as *-quick.json and labelled "mode": "quick": bench.report
# never renders them, so the documentation keeps the last full run's figures.
bench-quick: $(STAMP) $(BENCH_STAMP) bench-tools  ## the same, scaled down for development
	$(BIN)/python -m bench.core --quick
	$(BIN)/python -m bench.context --quick
	$(BIN)/python -m bench.compaction --quick
	$(BIN)/python -m bench.memory --quick
	$(BIN)/python -m bench.views --quick
	$(BIN)/python -m bench.writers --quick
	$(BIN)/python -m bench.pg_writers --quick
	$(BIN)/python -m bench.scale --quick
	$(BIN)/python -m bench.acp --quick
	$(BIN)/python -m bench.html --quick
	$(BIN)/python -m bench.replay --quick
	$(BIN)/python -m bench.http --quick
	$(BIN)/python -m bench.crypto --quick
	$(BIN)/python -m bench.importers --quick
	$(BIN)/python -m bench.watch --quick
	$(BIN)/python -m bench.sdks --quick
	$(VENV_BENCH)/bin/python -m bench.sdks --sdk adk --quick
	$(VENV_BENCH)/bin/python -m bench.peers --quick

bench-report:  ## re-render BENCHMARKS.md and the docs' bench blocks from bench/results (newest full runs)
	$(BIN)/python -m bench.report

bench-peers: $(BENCH_STAMP)  ## convlog vs OpenAI / LangChain / LangGraph / raw sqlite3 only
	$(VENV_BENCH)/bin/python -m bench.peers

bench-peers-quick: $(BENCH_STAMP)
	$(VENV_BENCH)/bin/python -m bench.peers --quick

screenshots: $(STAMP) bench-tools  ## the README's pictures of the HTML pages
	$(BIN)/python -m docs.make_screenshots

# The wheel the README's Install takes: dist/convlog-VERSION-py3-none-any.whl. Only the
# build front end is needed (a venv of its own, .build-venv), not the development set.
DIST ?= dist
BUILD_VENV := .build-venv
$(BUILD_VENV)/.stamp:
	@test -x $(BUILD_VENV)/bin/python || $(PYTHON) -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip install --quiet --upgrade 'build>=1.2'
	@touch $@

wheel: $(BUILD_VENV)/.stamp  ## build the wheel into dist/ (pip install 'dist/convlog-*.whl[extras]')
	rm -rf build $(DIST)/convlog-*.whl
	$(BUILD_VENV)/bin/python -m build --wheel --outdir $(DIST) . >/dev/null
	@ls $(DIST)/convlog-*.whl

wheel-check: wheel  ## build the wheel, install it in a fresh venv, run a smoke test
	rm -rf .wheel-venv
	$(PYTHON) -m venv .wheel-venv
	.wheel-venv/bin/python -m pip install --quiet $(DIST)/convlog-*.whl
	cd /tmp && $(CURDIR)/.wheel-venv/bin/python $(CURDIR)/tests/smoke_wheel.py
	rm -rf .wheel-venv build

clean:
	rm -rf $(VENV) $(VENV_BENCH) $(BUILD_VENV) .wheel-venv build dist .mypy_cache .ruff_cache .pytest_cache
