# The two commands of the README: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The pinned dependencies, then this checkout as an editable package: the `sente` and `sente-katago`
# commands in .venv/bin run the code here.
$(VENV)/.installed-run: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --editable .
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --editable .
	touch $@ $(VENV)/.installed-run

## run: install, then start the whole platform on this machine (server, worker, trainer, a client); Ctrl-C stops it
run: $(VENV)/.installed-run
	$(BIN)/python manage.py platform

## test: install, then check the format, the lint and the types, and run every test (`$(BIN)/python -m pytest -m slow` runs the end-to-end part alone)
test: $(VENV)/.installed-dev
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	@# Byte-compiled once here, the project's modules load at once in each of the hundreds of Python
	@# processes the tests start (where PYTHONDONTWRITEBYTECODE is set, each would compile them anew).
	$(BIN)/python -m compileall -q -j 0 common server client buildtools tests manage.py >/dev/null
	@# The type check runs beside the tests, in the time their waits leave a core idle (alone it kept
	@# one core busy for 20 s); what it finds is printed after them, and either failing fails the run.
	@# worksteal: a test process that runs out of tests takes the other's queued ones, so that neither
	@# waits at the end while the other runs the last long end-to-end tests it was given.
	@types=$$(mktemp); $(BIN)/mypy >$$types 2>&1 & checking=$$!; \
	echo "$(BIN)/python -m pytest -n 2 --dist worksteal --durations=20 (and $(BIN)/mypy beside it)"; \
	$(BIN)/python -m pytest -n 2 --dist worksteal --durations=20; tested=$$?; \
	wait $$checking; typed=$$?; echo "$(BIN)/mypy:"; cat $$types; rm -f $$types; \
	[ $$tested = 0 ] && [ $$typed = 0 ]

## bench: the speed benchmarks
bench: $(VENV)/.installed-dev
	for b in tests/bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
