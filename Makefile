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
	$(CARGO) build --workspace --release --bins --examples

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
	$(RELEASE)/segi-bench --parser

## install: build, then install-files.
## install-files (no build): segid and segi-client to $(PREFIX)/bin, policies to
## $(PREFIX)/share/segi, the systemd units to $(PREFIX)/lib/systemd/system (with @PREFIX@ and
## @BINDIR@ replaced by the installed paths, never by DESTDIR), the sysusers.d snippet to
## $(PREFIX)/lib/sysusers.d/segi.conf and docs/operations.md to $(PREFIX)/share/doc/segi.
## DESTDIR stages everything below another directory (packaging; no root needed there).
## uninstall: removes what install-files installed (not the segi user, not /var/lib/segi).
.PHONY: install-files uninstall
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd/system
SYSUSERSDIR := $(DESTDIR)$(PREFIX)/lib/sysusers.d
DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/segi
UNITS := segid.socket segid.service
UNIT_SED := -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(PREFIX)/bin|g'

# A sub-make, not a second prerequisite: with -j, install-files must not start before build ends.
install: build
	$(MAKE) --no-print-directory install-files

install-files:
	install -d "$(BINDIR)" "$(POLICYDIR)" "$(UNITDIR)" "$(SYSUSERSDIR)" "$(DOCDIR)"
	install -m 0755 $(RELEASE)/segid $(RELEASE)/segi-client "$(BINDIR)/"
	cp -r policies/. "$(POLICYDIR)/"
	for unit in $(UNITS); do \
		sed $(UNIT_SED) "systemd/$$unit" > "$(UNITDIR)/$$unit.tmp"; \
		if grep -n '@[A-Z]*@' "$(UNITDIR)/$$unit.tmp"; then \
			echo "$$unit: placeholder left after substitution" >&2; rm -f "$(UNITDIR)/$$unit.tmp"; exit 1; \
		fi; \
		chmod 0644 "$(UNITDIR)/$$unit.tmp"; \
		mv -f "$(UNITDIR)/$$unit.tmp" "$(UNITDIR)/$$unit"; \
	done
	install -m 0644 systemd/segi.sysusers.conf "$(SYSUSERSDIR)/segi.conf"
	install -m 0644 docs/operations.md "$(DOCDIR)/operations.md"

uninstall:
	rm -f "$(BINDIR)/segid" "$(BINDIR)/segi-client" "$(SYSUSERSDIR)/segi.conf" "$(DOCDIR)/operations.md"
	for unit in $(UNITS); do rm -f "$(UNITDIR)/$$unit"; done
	rm -rf "$(POLICYDIR)"
	rmdir "$(DOCDIR)" "$(DESTDIR)$(PREFIX)/share/segi" 2>/dev/null || true

## clean: remove build output.
clean:
	$(CARGO) clean
