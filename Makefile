# One command set used locally and in CI (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Re-install only when the locked dependencies change. requirements/*.lock are pip-compile's
# output (pip-tools; `make lock` after editing pyproject.toml's dependencies); the install
# needs nothing but pip.
STAMP := $(VENV)/.installed
PIP_COMPILE := pip-compile --quiet --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links

.PHONY: install ui-assets demo test fuzz-gm test-cluster lint lock bench bench-small bench-render soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): requirements/dev.lock | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements/dev.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# GraphiQL and Swagger UI are served by the service itself (no CDN): pinned npm
# tarballs, integrity-checked; a no-op when rest/static/vendor is already up to date.
ui-assets: | $(BIN)/python
	$(BIN)/python scripts/fetch_ui_assets.py

install: $(STAMP) ui-assets

# make demo PORT=8001 when 8000 is taken (checked before anything is written).
PORT ?= 8000
demo: install
	$(BIN)/campaign-api demo --port $(PORT)

test: install
	$(BIN)/pytest -n 2 --dist loadgroup --ignore=tests/cluster

# GM secrecy at length: the property suite of tests/engine/test_gm_properties.py with fresh
# random documents (make test runs a fixed set of 250), and as many again read by Pandoc in
# batches of up to 40; about 10 ms per document.
GM_FUZZ_EXAMPLES ?= 20000
fuzz-gm: install
	GM_FUZZ_EXAMPLES=$(GM_FUZZ_EXAMPLES) $(BIN)/pytest -n 0 tests/engine/test_gm_properties.py -k Generated

# Several hosts behind HAProxy, Redis Sentinel failover, PgBouncer (tests/cluster): Debian's
# haproxy, redis-sentinel and pgbouncer, started by the tests on loopback addresses.
test-cluster: install
	$(BIN)/pytest -n 0 -rA tests/cluster

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# Re-resolve the locks from pyproject.toml (needs pip-tools: `pipx install pip-tools`).
lock:
	$(PIP_COMPILE) -o requirements/runtime.lock pyproject.toml
	$(PIP_COMPILE) --extra dev -o requirements/dev.lock pyproject.toml
	$(PIP_COMPILE) --extra dev --extra bench -o requirements/bench.lock pyproject.toml

# Load benchmark (tests/benchmarks/run.py): generate a ~1.1 GB export, import it into a
# throwaway PostgreSQL database with the real CLI, then wrk the service, the peer and the
# floor (two workers each, then one; a crawl; conditional requests); table on stdout and in
# artifacts/bench.md. Everything but the import (rendering ~1 GB of Markdown, reported on
# its own) fits in BENCH_BUDGET_S.
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_EXPORT := artifacts/bench/export.json
BENCH_BUDGET_S ?= 570
BENCH_T0 := $(shell date +%s)

$(BENCH_STAMP): requirements/bench.lock | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements/bench.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(BENCH_STAMP)

bench: install $(BENCH_STAMP)
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	test -x /usr/bin/time || (apt-get update -qq && apt-get install -y -qq time)
	$(BIN)/python tests/benchmarks/generate.py --out $(BENCH_EXPORT)
	$(BIN)/python tests/benchmarks/run.py --export $(BENCH_EXPORT) --report artifacts/bench.md \
		--deadline $$(( $(BENCH_T0) + $(BENCH_BUDGET_S) ))

# The same scenarios on a 1/20 campaign (5,600 public sessions, a 68 MB export imported in
# about 2 minutes), one worker per server, page 50 as the deep page: to measure a change to
# the request path (CPU per request, service/floor) without `make bench`'s 40-minute import.
# Tables in artifacts/bench-small/bench.md.
SMALL_EXPORT := artifacts/bench-small/export.json

bench-small: install $(BENCH_STAMP)
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(BIN)/python tests/benchmarks/generate.py --out $(SMALL_EXPORT) --public-sessions 5600 \
		--private-sessions 600 --locations 2000 --entities 1000
	BENCH_WORKER_PROFILES=1 BENCH_DEEP_PAGE=50 $(BIN)/python tests/benchmarks/run.py \
		--export $(SMALL_EXPORT) --report artifacts/bench-small/bench.md

# CPU of 100 KB of the densest Markdown shapes: render_public beside stock mdformat,
# markdown-it's parse alone and the import's estimate, then the largest input of each shape
# that import accepts (tests/benchmarks/render_floor.py; ~6 minutes).
bench-render: install
	$(BIN)/python -m tests.benchmarks.render_floor

# Soak (tests/soak/soak.py, not part of `make test`): two workers, Redis limits, steady
# load for SOAK_SECONDS (default 600); report on stdout and in artifacts/soak.json.
soak: install
	$(BIN)/python -m tests.soak.soak

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis campaign.db artifacts
