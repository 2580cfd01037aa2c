# Every target installs what it needs into .venv first; nothing else is assumed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench pictures lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	$(BIN)/python -m compileall -q taskboard  # start-up is the latency: never compile per call
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)  ## show the sample board
	$(BIN)/tasks --dir .tasks.example board
	$(BIN)/tasks --dir .tasks.example list

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider

# The benchmark times a regular (not editable) install in its own venv: an editable
# install's import hook slows every interpreter start, the bare one included.
BENCH_VENV := .venv-bench
bench: $(STAMP)  ## timings against the bare interpreter
	rm -rf $(BENCH_VENV)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[mcp]'  # the extra: bench times tasks mcp too
	$(BENCH_VENV)/bin/python -m compileall -q $(BENCH_VENV)/lib
	$(BENCH_VENV)/bin/python bench/bench.py

pictures: $(STAMP)  ## regenerate the SVGs the README shows
	$(BIN)/tasks --dir .tasks.example board --svg docs/board.svg > /dev/null
	$(BIN)/tasks --dir .tasks.example graph --svg docs/graph.svg > /dev/null

lint: $(STAMP)  ## formatter, linter and type checker, as CI runs them
	$(BIN)/ruff format --check taskboard tests bench
	$(BIN)/ruff check taskboard tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info
