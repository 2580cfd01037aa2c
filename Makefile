# `make install` puts the `tasks` command on your PATH; every other target installs what it
# needs into the development venv .venv first. Nothing but Python and make is assumed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# where `make install` puts tasks when neither pipx nor uv is there
PREFIX ?= $(HOME)/.local
TOOL_VENV := $(PREFIX)/share/repo-taskboard

.PHONY: install uninstall dev demo test fuzz bench pictures browser-picture reference docs lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev,docs]'
	$(BIN)/python -m compileall -q taskboard  # start-up is the latency: never compile per call
	touch $(STAMP)

install:  ## put `tasks` on your PATH, with the MCP and web extras: pipx, else uv, else a venv in $(PREFIX)
	@if command -v pipx >/dev/null 2>&1; then \
	  echo "pipx install --force '.[mcp,web]'"; pipx install --force '.[mcp,web]' && \
	  { command -v tasks >/dev/null 2>&1 || echo "put pipx's folder on your PATH: pipx ensurepath, then open a new shell"; }; \
	elif command -v uv >/dev/null 2>&1; then \
	  echo "uv tool install --force '.[mcp,web]'"; uv tool install --force '.[mcp,web]' && \
	  { command -v tasks >/dev/null 2>&1 || echo "put uv's tool folder on your PATH: uv tool update-shell, then open a new shell"; }; \
	else \
	  echo "neither pipx nor uv: a venv of its own in $(TOOL_VENV), tasks linked into $(PREFIX)/bin"; \
	  rm -rf '$(TOOL_VENV)' && $(PYTHON) -m venv '$(TOOL_VENV)' && \
	  '$(TOOL_VENV)/bin/python' -m pip install --quiet '.[mcp,web]' && \
	  mkdir -p '$(PREFIX)/bin' && ln -sf '$(TOOL_VENV)/bin/tasks' '$(PREFIX)/bin/tasks' && \
	  case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "add $(PREFIX)/bin to your PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac; \
	fi

uninstall:  ## take `tasks` off your PATH again (whichever way make install put it there)
	@if command -v pipx >/dev/null 2>&1; then pipx uninstall repo-taskboard || true; fi
	@if command -v uv >/dev/null 2>&1; then uv tool uninstall repo-taskboard || true; fi
	rm -rf '$(TOOL_VENV)'
	@if [ -L '$(PREFIX)/bin/tasks' ] && [ ! -e '$(PREFIX)/bin/tasks' ]; then rm -f '$(PREFIX)/bin/tasks'; fi

dev: $(STAMP)  ## the development venv .venv: an editable install with the test and lint tools

demo: $(STAMP)  ## show the sample board
	$(BIN)/tasks --dir .tasks.example board
	$(BIN)/tasks --dir .tasks.example list

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider

# The suite's hypothesis cases are the same on every run (tests/conftest.py); this explores
# fresh random ones, twenty times as many. Run it before resolving any merge or model change.
fuzz: $(STAMP)  ## the property tests with fresh random cases, many more of them
	$(BIN)/python -m pytest -n 2 -p no:cacheprovider -m hypothesis --hypothesis-profile=fuzz

# The benchmark times a regular (not editable) install in its own venv: an editable
# install's import hook slows every interpreter start, the bare one included.
BENCH_VENV := .venv-bench
bench: $(STAMP)  ## timings against the bare interpreter
	rm -rf $(BENCH_VENV)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet '.[mcp,web]'  # the extras: bench times tasks mcp and tasks serve too
	$(BENCH_VENV)/bin/python -m compileall -q $(BENCH_VENV)/lib
	$(BENCH_VENV)/bin/python bench/bench.py

pictures: $(STAMP)  ## regenerate the SVGs the README shows
	$(BIN)/tasks --dir .tasks.example board --svg docs/board.svg > /dev/null
	$(BIN)/tasks --dir .tasks.example graph --svg docs/graph.svg > /dev/null

browser-picture: $(STAMP)  ## docs/browser.png: the board page in headless Chromium (apt: chromium chromium-driver)
	$(BIN)/python bench/picture.py --board .tasks.example --out docs/browser.png

reference: $(STAMP)  ## regenerate docs/reference/commands.md and tools.md from the code (tests fail when stale)
	$(BIN)/python scripts/reference.py

lint: $(STAMP)  ## formatter, linter, type checker and the docs site (--strict: a broken link fails), as CI runs them
	$(BIN)/ruff format --check taskboard tests bench scripts
	$(BIN)/ruff check taskboard tests bench scripts
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

clean:
	rm -rf $(VENV) $(BENCH_VENV) build *.egg-info site

docs: $(STAMP)  ## the docs site in site/, with MkDocs + Material, --strict (CI builds it); open site/index.html
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
