#!/usr/bin/env bash
# Installs what building and testing segi needs, and nothing when it is all there.
# Idempotent: checks each Debian package with `dpkg -s` first, and only touches apt when
# something is missing. Prints one line on success.
set -euo pipefail

# libseccomp-dev + pkg-config: the daemon links libseccomp (found through pkg-config).
# gcc/g++: linker and C build scripts. bubblewrap: the benchmark's comparison point.
# util-linux: unshare(1) for the benchmark and tests. python3: test helpers.
# iproute2: network-namespace checks. make: the build entry point itself. git: the HTTP API
# fetches evaluators from repositories (and its tests make some). curl: the HTTP API's tests.
# nodejs: one of the program grader examples (its test skips Node when it is missing).
packages=(libseccomp-dev pkg-config gcc g++ bubblewrap util-linux python3 iproute2 make git curl)

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} > 0)); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: missing Debian packages: ${missing[*]}" >&2
        echo "run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        echo "setup: cargo is installed in ~/.cargo/bin but not on PATH; run: source \"\$HOME/.cargo/env\"" >&2
    else
        echo "setup: cargo not found; install Rust with rustup:" >&2
        echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && source \"\$HOME/.cargo/env\"" >&2
    fi
    exit 1
fi

echo "setup: ok ($(cargo --version | cut -d' ' -f1-2), ${#packages[@]} Debian packages present)"
