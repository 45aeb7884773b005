#!/usr/bin/env bash
# The run command: installs what is missing, builds, and shows Gatehouse working on the
# embedded demo server (until the desktop app exists, through the CLI): connect, list,
# call, watch the traffic, over stdio and Streamable HTTP, in both protocol eras.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --workspace --locked --quiet
bin=target/debug
gatehouse=$bin/gatehouse
demo=$bin/gatehouse-demo-server
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@" || true; }

step "$gatehouse" connect --stdio "$demo"
step "$gatehouse" tools --stdio "$demo"
step "$gatehouse" call --stdio "$demo" add --args '{"a": 2, "b": 3}'
step "$gatehouse" call --stdio "$demo" slow --args '{"steps": 3, "delay_ms": 200}'
step "$gatehouse" call --stdio "$demo" fail
step "$gatehouse" --era 2025-11-25 trace --stdio "$demo" --call echo --args '{"message": "hello"}'

log=$(mktemp)
RUST_LOG=warn "$demo" --http 127.0.0.1:0 > "$log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$log")
step "$gatehouse" connect --url "$url"
step "$gatehouse" call --url "$url" echo --args '{"message": "over Streamable HTTP"}'
