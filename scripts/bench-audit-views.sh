#!/usr/bin/env bash
# What reading the audit log costs at 10,000 and 1,000,000 records (release builds): the
# newest records (`gatehouse audit show --last 10`), the whole log streamed (`audit show`,
# `audit export`), the AI clients view (`Host::clients`, cold: seeded from the log's newest
# records; warm: from memory) and the Audit view's page (`Host::audit`). Each measured
# command runs under /usr/bin/time -v for its wall time and peak memory (max RSS). The logs
# are written as a host writes them (8 gateway clients' tool calls, 64 MiB segments) into a
# scratch directory that is removed at the end. Prints a markdown table for
# docs/benchmarks.md.
#
#   scripts/bench-audit-views.sh [SIZES...]     (default: 10000 1000000)
#
# BENCH_PREBUILT=1 skips the two release builds (binaries already built from this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 1000000)
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [ "${BENCH_PREBUILT:-0}" != 1 ]; then
  cargo build --release --locked -p gatehouse-cli >&2
  cargo build --release --locked -p gatehouse-host --example audit_views >&2
fi
gatehouse=$PWD/target/release/gatehouse
views=$PWD/target/release/examples/audit_views
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Runs "$@" with stdout to /dev/null under /usr/bin/time -v; prints "SECONDS MAXRSS_KIB".
measure() {
  /usr/bin/time -v "$@" >/dev/null 2>"$scratch/time.txt" || { cat "$scratch/time.txt" >&2; exit 1; }
  python3 - "$scratch/time.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
seconds = 0.0
for part in wall.split(":"):
    seconds = seconds * 60 + float(part)
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)
print(f"{seconds:.3f} {rss}")
PY
}

rows=()
for size in "${sizes[@]}"; do
  data=$scratch/$size/data
  gen=$("$views" generate "$data" "$size")
  echo "generated: $gen" >&2
  log=$data/audit.jsonl
  read -r last_s last_kb < <(measure "$gatehouse" audit show --last 10 "$log")
  read -r lastf_s lastf_kb < <(measure "$gatehouse" audit show --last 10 --server 'demo [urn:gatehouse:demo-server]' --type tool_call "$log")
  read -r show_s show_kb < <(measure "$gatehouse" audit show "$log")
  read -r json_s json_kb < <(measure "$gatehouse" --json audit show "$log")
  read -r export_s export_kb < <(measure "$gatehouse" audit export "$log")
  # The views: the host opened on the log (its own process), each view timed inside.
  /usr/bin/time -v "$views" views "$data" >"$scratch/views.json" 2>"$scratch/time.txt"
  views_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$scratch/time.txt")
  rows+=("$size|$gen|$last_s|$last_kb|$lastf_s|$lastf_kb|$show_s|$show_kb|$json_s|$json_kb|$export_s|$export_kb|$(cat "$scratch/views.json")|$views_kb")
  rm -rf "${scratch:?}/$size"
done

python3 - "${rows[@]}" <<'PY'
import json, sys
print("| records | log | `show --last 10` | `--last 10 --server --type` | `show` (streamed) | `--json show` | `export` | clients view cold / warm | Audit view page | views process max RSS |")
print("|---:|---|---|---|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    (size, gen, last_s, last_kb, lastf_s, lastf_kb, show_s, show_kb, json_s, json_kb,
     export_s, export_kb, views, views_kb) = row.split("|")
    gen = json.loads(gen)
    views = json.loads(views)
    mib = lambda kb: f"{int(kb) / 1024:.1f} MiB"
    print(
        f"| {int(size):,} | {gen['bytes'] / 2**20:.0f} MB, {gen['segments']} sealed segments, "
        f"{gen['bytes_per_record']:.0f} B/record "
        f"| {float(last_s) * 1000:.0f} ms, {mib(last_kb)} "
        f"| {float(lastf_s) * 1000:.0f} ms, {mib(lastf_kb)} "
        f"| {float(show_s):.2f} s, {mib(show_kb)} "
        f"| {float(json_s):.2f} s, {mib(json_kb)} "
        f"| {float(export_s):.2f} s, {mib(export_kb)} "
        f"| {views['clients_cold_ms']:.1f} ms / {views['clients_warm_median_ms']:.2f} ms ({views['client_rows']} rows) "
        f"| {views['audit_page_ms']:.1f} ms ({views['audit_page_records']} records) "
        f"| {mib(views_kb)} |"
    )
print()
print("Wall times include starting the process (the CLI rows) or are measured inside the host's")
print("process (the views). `show --last` and the views read from the end of the log; `show` and")
print("`export` stream it whole (their time grows with the log, their memory does not).")
PY
