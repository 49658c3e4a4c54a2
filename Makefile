# One command set used locally and in CI (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Re-install only when the declared dependencies change.
STAMP := $(VENV)/.installed

.PHONY: install ui-assets demo test lint bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# GraphiQL and Swagger UI are served by the service itself (no CDN): pinned npm
# tarballs, integrity-checked; a no-op when rest/static/vendor is already up to date.
ui-assets: | $(BIN)/python
	$(BIN)/python scripts/fetch_ui_assets.py

install: $(STAMP) ui-assets

demo: install
	$(BIN)/campaign-api demo

test: install
	$(BIN)/pytest -n 2 --dist loadgroup

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis campaign.db artifacts
