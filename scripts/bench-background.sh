#!/usr/bin/env bash
# The background host's footprint (issue: always-there host): `gatehouse-background --demo`,
# the app's host with no window, idle with the demo connected. Release builds, fresh config
# and data directories, a private session bus (the tray and notifications talk D-Bus; no tray
# host runs on it, as on a desktop without one).
#
#   memory     the whole process tree (the host and the demo servers it started, wherever
#              they run: stdio servers get sessions of their own; not the private bus, which
#              stands in for the desktop's), summed PSS / VmRSS / USS,
#              10 s after the demo's admission is in the audit log
#   wake-ups   context switches (voluntary + involuntary) of every thread of every process in
#              the tree over IDLE seconds (default 60), after that; listed per thread that woke
#
#   scripts/bench-background.sh [RUNS] [IDLE_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
idle=${2:-60}
if [ -z "${BENCH_NO_BUILD:-}" ]; then
  cargo build --release --locked -p gatehouse-background -p gatehouse-demo-server >&2
fi
target=${CARGO_TARGET_DIR:-target}
host=$PWD/$target/release/gatehouse-background
demo=$PWD/$target/release/gatehouse-demo-server
[ -x "$host" ] || { echo "bench-background: $host is not built" >&2; exit 1; }
work=$(mktemp -d)
current=""

# Every live process of session $1 and every descendant of those, wherever it runs.
tree_pids() {
  ps -e -o pid=,ppid=,sid=,stat= 2>/dev/null | awk -v s="$1" '
    $4 !~ /^Z/ { parent[$1] = $2; live[$1] = 1; if ($3 == s) keep[$1] = 1 }
    END {
      do { grown = 0
        for (p in live) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grown = 1 }
      } while (grown)
      for (p in keep) print p
    }'
}
stop_tree() {
  local sid=$1 pids
  # shellcheck disable=SC2046
  set -- $(tree_pids "$sid")
  kill -TERM "$sid" 2>/dev/null || true
  for _ in $(seq 100); do
    pids=""
    for p in "$@"; do [ -d "/proc/$p" ] && pids="$pids $p"; done
    [ -z "$pids" ] && break
    sleep 0.1
  done
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  wait "$sid" 2>/dev/null || true
}
cleanup() {
  [ -z "$current" ] || stop_tree "$current"
  rm -rf "$work"
}
trap cleanup EXIT

admitted() {
  python3 - "$1" <<'PY'
import json, sys
n = 0
try:
    for line in open(sys.argv[1], encoding="utf-8"):
        record = json.loads(line)
        if record.get("event") == "admission" and (record.get("data") or {}).get("status") == "admitted":
            n += 1
except FileNotFoundError:
    pass
print(n)
PY
}

# "tid comm switches" for every thread of the tree.
switches() {
  local pid task
  for pid in $(tree_pids "$1"); do
    for task in /proc/"$pid"/task/*; do
      awk -v t="${task##*/}" -v c="$(cat "$task/comm" 2>/dev/null)" -v p="$(cat "/proc/$pid/comm" 2>/dev/null)" '
        /^(non)?voluntary_ctxt_switches:/ {s += $2}
        END {if (s != "") print t, p "/" c, s}' "$task/status" 2>/dev/null || true
    done
  done
}

printf 'run\tprocesses\tpss_kib\trss_kib\tuss_kib\twakeups\n' >"$work/runs.tsv"
for run in $(seq "$runs"); do
  dir=$work/run-$run
  mkdir -p "$dir/config" "$dir/data" "$dir/cache" "$dir/runtime"
  chmod 700 "$dir/runtime"
  HOME=$dir XDG_CONFIG_HOME=$dir/config XDG_DATA_HOME=$dir/data XDG_CACHE_HOME=$dir/cache \
    XDG_RUNTIME_DIR=$dir/runtime GATEHOUSE_DEMO_SERVER=$demo \
    setsid dbus-run-session -- "$host" --demo </dev/null >"$dir/out.log" 2>&1 &
  current=$!
  audit=$dir/data/gatehouse/audit.jsonl
  deadline=$((SECONDS + 60))
  until [ "$(admitted "$audit")" -ge 2 ]; do
    [ $SECONDS -lt $deadline ] || { echo "bench-background: the demo was not admitted in 60 s" >&2; cat "$dir/out.log" >&2; exit 1; }
    sleep 0.2
  done
  sleep 10
  pss=0 rss=0 uss=0 n=0
  : >"$dir/processes.tsv"
  for pid in $(tree_pids "$current"); do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    read -r p u < <(awk '/^Pss:/ {p = $2} /^Private_(Clean|Dirty):/ {u += $2}
      END {if (p != "") print p, u}' "/proc/$pid/smaps_rollup" 2>/dev/null || true)
    [ -n "$r" ] && [ -n "${p:-}" ] || continue
    comm=$(cat "/proc/$pid/comm")
    # The private session bus is this script's stand-in for the desktop's own: not counted.
    case $comm in dbus-*) continue ;; esac
    printf '%s\t%s\t%s\t%s\n' "$comm" "$r" "$p" "$u" >>"$dir/processes.tsv"
    rss=$((rss + r)); pss=$((pss + p)); uss=$((uss + u)); n=$((n + 1))
  done
  switches "$current" | sort >"$dir/before"
  sleep "$idle"
  switches "$current" | sort >"$dir/after"
  woke=$(join "$dir/before" "$dir/after" | awk '{d = $4 - $3; if (d > 0) {print "  " $2 " (tid " $1 "): " d; t += d}} END {print "total " t + 0}')
  total=$(printf '%s\n' "$woke" | awk '/^total/ {print $2}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$n" "$pss" "$rss" "$uss" "$total" >>"$work/runs.tsv"
  echo "run $run: $n processes; per process (comm, VmRSS, PSS, USS KiB):" >&2
  sed 's/^/  /' "$dir/processes.tsv" >&2
  echo "run $run: wake-ups over ${idle} s:" >&2
  printf '%s\n' "$woke" >&2
  stop_tree "$current"
  current=""
done

python3 - "$work/runs.tsv" "$idle" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def med(key, scale=1024):
    values = [int(r[key]) / scale for r in rows]
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"
print(f"| measure ({len(rows)} runs, median (min–max)) | gatehouse-background --demo, idle |")
print("|---|---:|")
print(f"| processes in the tree | {rows[0]['processes']} |")
print(f"| sum of PSS (MiB) | {med('pss_kib')} |")
print(f"| sum of VmRSS (MiB) | {med('rss_kib')} |")
print(f"| sum of USS (MiB) | {med('uss_kib')} |")
print(f"| context switches over {sys.argv[2]} s idle, all threads | {med('wakeups', 1)} |")
PY
