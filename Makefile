# claimgraph — the two commands of the README, and a few helpers.
#
#   make run    set everything up (venv, dependencies, embedded PostgreSQL,
#               migrations, demo data and accounts) and serve the console;
#               Ctrl-C or SIGTERM stops the server and the embedded PostgreSQL
#   make test   lint and run the whole test suite
#   make stop   stop the embedded PostgreSQL left running (after a SIGKILL)

SHELL := /bin/bash
.DEFAULT_GOAL := help
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml | cksum | cut -d' ' -f1)

# Local work runs with DEBUG on (a development secret): the settings default to
# it on the embedded database, and this makes it so for `make test` against a
# DATABASE_URL too. Production sets DJANGO_SECRET_KEY and leaves DJANGO_DEBUG
# off (see README).
export DJANGO_DEBUG ?= 1

.PHONY: help run stop test lint format serve migrate demo worker bench clean

help:
	@echo "make run   - set up everything and serve the console on http://127.0.0.1:$(PORT)"
	@echo "make test  - lint and run the whole test suite"
	@echo "make stop  - stop the embedded PostgreSQL if something left it running"
	@echo "make bench - every performance target at 100k and 1M facts and served, PASS/FAIL (about 20 minutes on 2 cores; see README)"
	@echo "make worker / make format / make clean"

# Find a Python >= 3.12: PATH first, then pyenv's versions folder.
$(PY):
	@python=""; \
	for candidate in python3.14 python3.13 python3.12 python3 python \
	    $$(ls -d $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 /root/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
	  if "$$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	    python="$$candidate"; break; \
	  fi; \
	done; \
	if [ -z "$$python" ]; then \
	  echo "claimgraph needs Python 3.12 or newer, and none was found on PATH or under ~/.pyenv/versions."; \
	  echo "Install one (e.g. 'apt-get install python3.12 python3.12-venv', or 'pyenv install 3.12') and run make again."; \
	  exit 1; \
	fi; \
	echo "Using $$("$$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"; \
	"$$python" -m venv $(VENV) || { echo "Could not create a venv: on Debian/Ubuntu install python3-venv for this Python."; exit 1; }

$(STAMP): $(PY) requirements.lock pyproject.toml
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

migrate: $(STAMP)
	$(PY) manage.py migrate --no-input

demo: migrate
	$(PY) manage.py seed_demo

# The supervisor runs the migrations, the demo data and the server, and on
# Ctrl-C or SIGTERM stops the server and then the embedded PostgreSQL.
run: $(STAMP)
	$(PY) -m claimgraph_site.lib.serve --port $(PORT)

# Without a venv nothing can have started the embedded PostgreSQL.
stop:
	@if [ -x $(PY) ]; then $(PY) -m claimgraph_site.lib.embedded_db stop; fi

worker: migrate
	$(PY) manage.py worker

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# Every target of the scale issue at 100,000 and 1,000,000 facts, in one table,
# then the site served as production serves it to 16 clients at once against
# pgbench's raw write (docs/performance.md; needs Debian's wrk and pgbench).
# BENCH_ARGS and SERVED_ARGS pass options, e.g. BENCH_ARGS="--sizes 20000,200000".
bench: migrate
	$(PY) bench/scale.py $(BENCH_ARGS)
	$(PY) bench/served.py $(SERVED_ARGS)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache
