# segi: build, test, demo, benchmark and install.
# `make test` is what CI runs (.ci/run); everything builds in release mode because the
# daemon's timing matters (the release profile keeps debug info for backtraces).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

CARGO ?= cargo
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(DESTDIR)$(PREFIX)/bin
POLICYDIR := $(DESTDIR)$(PREFIX)/share/segi/policies
RELEASE := target/release

.PHONY: setup build run test lint bench install clean

## setup: install missing Debian packages and check for cargo (idempotent).
setup:
	bash scripts/setup.sh

## build: release build of every binary in the workspace.
build: setup
	$(CARGO) build --workspace --release --bins

## run: start a private segid and show a few runs through segi-client.
run: build
	bash scripts/demo.sh

## lint: formatting and clippy; part of `test`, first, so that failures show early.
lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --release -- -D warnings

## test: lint, then every test of the workspace, then the check for leftover state
## (mounts, cgroups, processes) when scripts/check-leftovers.sh exists.
test: lint build
	$(CARGO) test --workspace --release
	if [[ -f scripts/check-leftovers.sh ]]; then bash scripts/check-leftovers.sh; fi

## bench: median time per run of /bin/true, bare and under unshare, bwrap and segi.
bench: build
	$(RELEASE)/segi-bench

## install: segid and segi-client to $(PREFIX)/bin, policies to $(PREFIX)/share/segi.
install: build
	install -d "$(BINDIR)" "$(POLICYDIR)"
	install -m 0755 $(RELEASE)/segid $(RELEASE)/segi-client "$(BINDIR)/"
	cp -r policies/. "$(POLICYDIR)/"

## clean: remove build output.
clean:
	$(CARGO) clean
