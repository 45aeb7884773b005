#!/usr/bin/env bash
# What confinement costs (crates/gatehouse-host/benches/confine.rs): the demo server started
# and called confined and unconfined in one run, against release builds of the demo server and
# the sandbox init. Prints markdown tables for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked -p gatehouse-demo-server -p gatehouse-sandbox
cargo bench --locked -p gatehouse-host --bench confine
