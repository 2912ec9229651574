# Every target does its own set-up, so a fresh clone needs only python3.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test demo bench screenshots lint realcli-latest dist

$(STAMP): pyproject.toml
	@# the system's packages with its own manager: apt on Debian, brew on macOS
	sh scripts/system-packages.sh
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@# navigator panes run with -OO (core/tmux/navigator_pane.py): their bytecode, compiled once
	$(BIN)/python -OO -m compileall -q -j 0 core navigator storage \
		$$($(BIN)/python -c "import os, platformdirs, rich, textual, typing_extensions as t; \
		print(*(os.path.dirname(m.__file__) for m in (platformdirs, rich, textual)), t.__file__)")
	@touch $(STAMP)

setup: $(STAMP)

# Three pytest workers, a test file each (pytest-xdist): most of a test's time is
# waiting on tmux, real agent CLIs and their stand-ins, so three share two cores
# well; four were faster (16 min) but at a load of ~10 a Codex agent read a typed
# line and its Enter in one read. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 3

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile

demo: $(STAMP)
	$(BIN)/switchboard demo

bench: $(STAMP)
	$(BIN)/python -m tests.bench.run_all

screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

# The real-CLI journeys against the newest release npm serves today, then what
# changed since the newest tested one (a new release judged within a day).
realcli-latest: $(STAMP)
	SWITCHBOARD_REALCLI_LATEST=1 $(BIN)/python -m pytest -p no:cacheprovider tests/realcli
	$(BIN)/python -m tests.realcli.drift

lint: $(STAMP)
	$(BIN)/ruff check .

# The sdist and wheel a user installs (`uv tool install dist/switchboard-*.whl`, or pipx)
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
