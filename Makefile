# The two commands of the README: `make run` and `make test`. Each bootstraps a fresh
# clone: uv (installed when missing), the pinned environment in .venv, the database.
export UV_PYTHON_DOWNLOADS := never
# Byte-compiled dependencies start ~3x faster; some shells forbid writing .pyc files.
export UV_COMPILE_BYTECODE := 1
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
.PHONY: run test check lint bootstrap replay clean bench audit screenshots

bootstrap: $(VENV)/.synced

# uv comes from PyPI into var/bootstrap when neither `uv` nor `python3 -m uv` exists.
# One shell line: make expands a recipe before running it, so uv is found here.
# The pinned Python (.python-version) when there is one, else any 3.12 or newer.
$(VENV)/.synced: pyproject.toml uv.lock
	@if command -v uv >/dev/null 2>&1; then uv=uv; \
	elif $(PYTHON) -m uv --version >/dev/null 2>&1; then uv="$(PYTHON) -m uv"; \
	else test -x var/bootstrap/bin/uv || \
		{ $(PYTHON) -m venv var/bootstrap && var/bootstrap/bin/pip install --quiet uv; } || exit 1; \
		uv=var/bootstrap/bin/uv; fi; \
	py=$$($$uv python find 2>/dev/null || $$uv python find '>=3.12') || \
		{ echo "Python 3.12 or newer is needed (none found on PATH or by uv)"; exit 1; }; \
	echo "$$uv sync --frozen --python $$py"; $$uv sync --frozen --python "$$py"
	@touch $@

run: bootstrap
	$(PY) manage.py up

# Tests keep their database, broker folder and keys apart from `make run`'s, and run on
# every core (pytest-xdist), each worker apart from the others (tests/support/parallel.py);
# the tests of one xdist_group share a worker. One part: make test PYTEST_ADDOPTS=tests/web
PARALLEL := -n auto --dist loadgroup
test: bootstrap
	SUPERVISOR_VAR_DIR=$(CURDIR)/var/test $(PY) -m pytest $(PARALLEL)

# The fast tier, for the edit-and-check loop: every test but the end-to-end ones (a real
# Chromium, or `make run` itself: e2e), those that play the real T3 Code servers of
# ../shared (real_t3), the fault suite with its own PostgreSQL and Redis (faults) and any
# other test over about 5 s (slow). Under three minutes on two cores; `make test` runs them all.
check: bootstrap
	SUPERVISOR_VAR_DIR=$(CURDIR)/var/test $(PY) -m pytest $(PARALLEL) \
		-m "not e2e and not real_t3 and not faults and not slow"

# The README's pictures into docs/screenshots/ (Debian's Chromium; about six minutes, the
# demo's included). tests/browser/screenshots.py is a generator: never part of `make test`.
screenshots: bootstrap
	SUPERVISOR_VAR_DIR=$(CURDIR)/var/test SUPERVISOR_UPDATE_SCREENSHOTS=1 $(PY) -m pytest \
		tests/browser/screenshots.py tests/browser/test_first_run.py

# Issues 10, 21, 32 and 42's figures into docs/benchmarks.md (PostgreSQL and Redis on 127.0.0.1; about
# an hour and a half on two cores). `--baseline REV` adds a before/after column.
# Never part of `make test`.
bench: bootstrap
	$(PY) bench/ingest_copy.py --runs 3 --growth
	$(PY) bench/detect_latency.py --runs 3
	$(PY) bench/at_size.py --scales 0.1,0.3,1.0 --runs 3
	$(PY) bench/scale_out.py --runs 3
	$(PY) bench/t3_follow.py --runs 3 --backend both --lag-samples 8
	$(PY) bench/detect_cpu.py --runs 3 --write
	$(PY) bench/detect_cpu.py --data history --runs 3 --write
	$(PY) bench/detect_cpu.py --per-parent 200 --runs 3 --write

# Known vulnerabilities in the locked dependencies (OSV, else PyPI's JSON API).
audit:
	python3 .ci/audit-dependencies

lint: bootstrap
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

replay: bootstrap
	$(PY) manage.py replay --check scenarios/*.json tests/scenarios/*.json

clean:
	rm -rf var/broker var/supervisor.sqlite3* var/celerybeat-schedule* var/first-login-password
