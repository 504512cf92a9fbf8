# bytewright: `make test` and `make bench` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv build test test-rust test-python lint fmt bench bench-full bench-deps browser-deps pickletester docs docs-check fuzz fuzz-graph fuzz-pickle-reader fuzz-wire clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

build: venv
	maturin develop --release --quiet

lint: venv
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	ruff check .
	ruff format --check .
	mypy --strict python/bytewright

test-rust:
	cargo test --workspace --exclude bytewright-python

# The suite runs twice: on the fast paths this interpreter allows, then with every CPython
# fast path replaced by its portable fallback (docs/architecture.md), as 3.12+ and other
# interpreters run it.
test-python: build bench-deps browser-deps pickletester
	pytest
	BYTEWRIGHT_PORTABLE=1 pytest

# pytest runs last, so its summary closes the output.
test: lint test-rust fuzz-graph fuzz-pickle-reader fuzz-wire docs-check test-python

# The browser test of `bw.explain`'s HTML view (tests/explain/test_browser.py) uses Debian's
# chromium and chromium-driver: installed here when missing and apt-get can (as root);
# otherwise the test is skipped and says why.
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 \
		 || (apt-get update -qq >/dev/null 2>&1 \
		     && apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1)) \
		|| echo "browser-deps: could not install chromium; the browser test will be skipped"; \
	else \
		echo "browser-deps: chromium and chromedriver are missing and apt-get needs root; the browser test will be skipped"; \
	fi

# CPython's own pickle tests (Lib/test/pickletester.py and test.support, for this
# interpreter's X.Y) from Debian's libpythonX.Y-testsuite and -stdlib packages, extracted
# into .venv/pickletester (tests/pickle_reader/test_cpython_pickletester.py runs them).
pickletester: venv
	tests/pickle_reader/fetch_pickletester.sh $(PY) $(VENV)/pickletester

# The documentation site: `make docs` builds it into site/; `make test` checks it with
# --strict (no broken link, no missing reference).
export NO_MKDOCS_2_WARNING := 1

docs: venv
	mkdocs build --quiet

docs-check: venv
	d=$$(mktemp -d) && mkdocs build --strict --quiet --site-dir $$d; s=$$?; rm -rf $$d; exit $$s

fmt: venv
	cargo fmt --all
	ruff format .
	ruff check --fix .

# The comparison packages (pinned; never imported by the library). `make test` installs them
# too (about a minute the first time), so the smoke test of the harness measures every peer arm.
bench-deps: $(VENV)/.bench-installed

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	touch $@

# Profiles (sizes, sampling) are in benchmarks/profiles.toml, targets in benchmarks/targets.toml.
bench: build bench-deps
	$(PY) -m benchmarks --profile default

bench-full: build bench-deps
	$(PY) -m benchmarks --profile full

# Coverage-guided fuzzing of the pure-Rust graph reader (fuzz/, outside the workspace).
# cargo-fuzz comes from crates.io; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept the
# -Z flags it passes, so no nightly is needed. The reader has no unsafe code, so the run
# uses no sanitizer but keeps debug assertions (overflow checks). `make test` runs it
# briefly; `make fuzz-graph FUZZ_SECONDS=600` for a real session.
FUZZ_SECONDS ?= 20

fuzz-graph:
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	mkdir -p fuzz/corpus/graph_reader
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run graph_reader corpus/graph_reader seeds \
		--sanitizer none --debug-assertions -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048

# The same for the standard-pickle checker (crates/pickle_reader): `make fuzz-pickle-reader`.
fuzz-pickle-reader:
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	mkdir -p fuzz/corpus/pickle_reader
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run pickle_reader corpus/pickle_reader seeds_pickle \
		--sanitizer none --debug-assertions -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048

# The wire VM (crates/wire) over the bundled formats' schemas and schemas drawn from the input
# (fuzz/fuzz_targets/wire_unpack.rs), seeded with real captures (fuzz/make_wire_seeds.py).
# Memory is bounded: an allocation beyond the input's size times a small constant fails it.
fuzz-wire:
	command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	mkdir -p fuzz/corpus/wire_unpack
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run wire_unpack corpus/wire_unpack seeds_wire \
		--sanitizer none --debug-assertions -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
		-malloc_limit_mb=256 -timeout=10

clean:
	rm -rf target $(VENV) benchmarks/results site
