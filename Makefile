# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e ".[all]" --group dev
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check langchain_ltm tests bench
	$(BIN)/ruff format --check langchain_ltm tests bench
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/python -m langchain_ltm.demo

bench: $(STAMP)
	$(BIN)/python bench/store_search.py
	$(BIN)/python bench/qdrant_search.py
	$(BIN)/python bench/postgres_search.py
	$(BIN)/python bench/secret_guard.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
