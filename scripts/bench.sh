#!/usr/bin/env bash
# The echo round-trip benchmark (see crates/gatehouse-host/benches/echo_roundtrip.rs): our host
# layer vs a bare rmcp client vs the TypeScript SDK client, in one run, against the release
# build of the demo server. Prints a markdown table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked -p gatehouse-demo-server
cargo bench --locked -p gatehouse-host --bench echo_roundtrip
