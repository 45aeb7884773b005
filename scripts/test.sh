#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test Gatehouse has:
# formatting and lints, unit and integration tests (including the real-keychain and the
# server-everything interop tests), and the official MCP conformance suite.
set -euo pipefail
cd "$(dirname "$0")/.."
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
