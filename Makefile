# bytewright: `make test` and `make bench` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv build test test-rust test-python lint fmt bench bench-full bench-deps fuzz clean

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

test-rust:
	cargo test --workspace --exclude bytewright-python

test-python: build bench-deps
	pytest

test: lint test-rust test-python

fmt: venv
	cargo fmt --all
	ruff format .
	ruff check --fix .

# The comparison packages (pinned; never imported by the library). `make test` installs them
# too (about 15 s), so the smoke test of the harness measures every peer arm.
bench-deps: $(VENV)/.bench-installed

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	touch $@

bench: build bench-deps
	$(PY) -m benchmarks --profile default

bench-full: build bench-deps
	$(PY) -m benchmarks --profile full

clean:
	rm -rf target $(VENV) benchmarks/results
