# Two commands do everything: `make run` serves the app, `make test` runs the whole suite.
# While working, `make test-fast` runs the suite without its slow tier (@pytest.mark.slow) on SQLite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast test-sqlite test-real-model lint format bench clean

# The packages are installed with uv (itself from PyPI, into the virtualenv): seconds where pip took 60 to
# 100 (bench/startup.py). pip installs them if uv cannot.
UV_INSTALL = $(PY) -m pip install --quiet uv && $(VENV)/bin/uv pip install --quiet --python $(PY)

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Aptix needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(UV_INSTALL) -e . || $(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(UV_INSTALL) -e '.[test,lint]' || $(PY) -m pip install --quiet -e '.[test,lint]'
	@touch $@

## run: install, then (manage.py aptix_prepare) migrate, seed, create the first admin (password printed once, kept in var/),
## build the demo database and collect the static files, then serve with Daphne
run: $(VENV)/.installed
	@mkdir -p var
	@test -s var/secret_key || $(PY) -c 'import secrets; print(secrets.token_urlsafe(50))' > var/secret_key
	@set -a; [ ! -f .env ] || . ./.env; set +a; \
	  export SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}"; \
	  $(PY) manage.py aptix_prepare && \
	  echo "Aptix on http://$(HOST):$(PORT)/  (admin: http://$(HOST):$(PORT)/admin/)" && \
	  exec $(PY) manage.py aptix_serve -b $(HOST) -p $(PORT)

## test: lint and types, then the whole suite, on a throwaway PostgreSQL cluster and Redis server (installed when missing)
test: $(VENV)/.installed-test lint
	bin/install-test-deps
	DEBUG=false SECRET_KEY=test-only-secret-key PYTEST=$(VENV)/bin/pytest bin/with-postgres bin/with-redis bin/pytest-tiers $(PYTEST_ARGS)

## test-sqlite: the same suite on SQLite
test-sqlite: $(VENV)/.installed-test
	DEBUG=false SECRET_KEY=test-only-secret-key DATABASE_URL= PYTEST=$(VENV)/bin/pytest bin/pytest-tiers $(PYTEST_ARGS)

## test-fast: the suite on SQLite without the slow tier (browsers, subprocess deployments, real MCP servers), on every core
## (compiled modules kept in __pycache__ even under PYTHONDONTWRITEBYTECODE: each worker would compile them again)
test-fast: $(VENV)/.installed-test
	DEBUG=false SECRET_KEY=test-only-secret-key DATABASE_URL= PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n auto -m "not slow" $(PYTEST_ARGS)

## test-real-model: the opt-in tier against a real model server (not in CI), e.g.
##   ../shared/local-llm/start.sh 8081 && make test-real-model APTIX_REAL_MODEL_URL=http://127.0.0.1:8081/v1
test-real-model: $(VENV)/.installed-test
	@test -n "$(APTIX_REAL_MODEL_URL)" || { echo "set APTIX_REAL_MODEL_URL (an OpenAI-compatible /v1 URL)"; exit 2; }
	DEBUG=false SECRET_KEY=test-only-secret-key DATABASE_URL= APTIX_REAL_MODEL_URL=$(APTIX_REAL_MODEL_URL) \
	  $(VENV)/bin/pytest tests/real_model $(PYTEST_ARGS)

## lint: ruff (lint + format check), mypy with django-stubs and the import layering (import-linter), as configured in pyproject.toml
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DEBUG=false SECRET_KEY=lint-only $(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## format: apply ruff's fixes and formatting
format: $(VENV)/.installed-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## bench: the benchmarks under bench/ (they print their figures)
bench: $(VENV)/.installed-test
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/agent_overhead.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/mcp_roundtrip.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/mcp_large_result.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/context_build.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/context_fit.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/ws_replay.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/stream_bytes.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/stream_bytes.py --prose
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/streams_concurrency.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/prompt_size.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/session_page.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/catalog_routing.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/catalog_yield.py
	DEBUG=false SECRET_KEY=bench-only bin/with-postgres $(PY) bench/usage.py  # a year of turns: PostgreSQL only
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/files.py
	DEBUG=false SECRET_KEY=bench-only $(PY) bench/knowledge_quality.py  # BM25; --embedding-url for hybrid
	DEBUG=false SECRET_KEY=bench-only bin/with-redis $(PY) bench/channel_layer.py
	DEBUG=false SECRET_KEY=bench-only bin/with-postgres bin/with-redis $(PY) bench/scale_out.py  # needs both (make test installs them)
	DEBUG=false SECRET_KEY=bench-only bin/with-postgres bin/with-redis $(PY) bench/automations_schedule.py  # ten minutes

clean:
	rm -rf $(VENV) var/static
