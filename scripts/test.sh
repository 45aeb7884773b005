#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test Gatehouse has:
# formatting and lints, unit and integration tests (including the real-keychain and the
# server-everything interop tests, and the desktop app driven in a real webview), the official
# MCP conformance suite (client scenarios, and server scenarios through the gateway), a short
# run of every fuzz target, and the desktop .deb: packaged (debug profile), installed with
# dpkg -i and started in demo mode under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
# A run builds everything once from clean: incremental state would only cost disk (tens of
# GB across the workspace's test targets) and a full disk fails the run.
export CARGO_INCREMENTAL=0
scripts/install-deps.sh

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo build" >&2
cargo build --workspace --all-targets --locked
echo "== cargo test" >&2
cargo test --workspace --locked
echo "== MCP conformance suite" >&2
GATEHOUSE_BIN=target/debug/gatehouse scripts/conformance.sh
echo "== MCP conformance suite, server scenarios: the gateway against its upstream alone" >&2
scripts/conformance-server.sh
echo "== fuzz (20 s a target; docs/fuzzing.md has the long runs)" >&2
scripts/fuzz.sh 20
echo "== desktop .deb (debug profile): package, install, start in demo mode" >&2
deb=$(scripts/package-deb.sh --debug | tail -n1)
scripts/deb-smoke.sh "$deb"
