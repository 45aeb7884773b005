#!/usr/bin/env bash
# Desktop app start-up and memory against a hello-world Tauri app:
#   scripts/bench-desktop.sh [RUNS]        (RUNS defaults to 10)
#
# Builds gatehouse-desktop, bench/hello-tauri and the demo server in release, starts one
# private Xvfb, and launches each app RUNS times from a fresh process with fresh config, data
# and cache directories, alternating the order (A B, B A, ...) so both share the machine's
# noise; one unmeasured launch of each comes first so both start with a warm page cache.
# Gatehouse runs with --demo, so it connects the demo servers at start.
#
# Per launch:
#   start (app)   ms from the app's main() to its first painted frame: what the app appends
#                 to GATEHOUSE_READY_FILE from its `ui_ready` command (called by the page after
#                 two requestAnimationFrames);
#   start (exec)  ms from just before the launch to the ready file's write (its mtime): adds
#                 exec, dynamic linking and everything before main();
#   memory        after the first paint (Gatehouse: after the audit log records the demo
#                 server admitted) plus SETTLE seconds: the sum over the app's whole process
#                 tree (its session: the app, WebKitWebProcess, WebKitNetworkProcess; and
#                 their descendants outside it: the demo servers, which Gatehouse starts in
#                 sessions of their own) of VmRSS (/proc/PID/status; shared pages counted once
#                 per process), of Pss (/proc/PID/smaps_rollup; shared pages split between sharers, so it
#                 moves with whatever else maps the same libraries) and of USS (Private_Clean
#                 + Private_Dirty: pages only that process maps; a lower bound).
# Then median, min and max of each, the ratio of the start medians, and the targets: start
# within 1.3x of hello-world; under 150 MB resident (checked on the PSS sum, in MiB).
#
# Environment: BENCH_SETTLE (seconds, default 2), BENCH_DROP_CACHES=1 (root: drop the page
# cache before every launch, for a cold-cache start; slows everything else on the machine).
# The apps inherit the rest, e.g. WEBKIT_SKIA_ENABLE_CPU_RENDERING=1 (WebKit paints on the
# CPU: gatehouse-desktop sets it for itself unless it is set, so this gives hello-tauri the same
# for a like-for-like run; =0 gives both GPU painting), WEBKIT_DISABLE_COMPOSITING_MODE=1, or
# GATEHOUSE_DEMO_SERVER (another demo server executable than the one next to
# the app, e.g. the stripped copy scripts/package-deb.sh puts in the .deb); such variables
# are named in the report.
# Per-launch rows, per-process memory and per-mapping memory (mappings.tsv: the app's
# executable, each library, heap, malloc arenas, thread stacks, other anonymous memory; see
# mapping_memory) go to <target>/bench-desktop/; the summary compares the two apps by mapping.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

runs=${1:-10}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/bench-desktop.sh [RUNS]" >&2; exit 2; }
settle=${BENCH_SETTLE:-2}
drop_caches=${BENCH_DROP_CACHES:-0}
launch_timeout=60

if [ -z "${BENCH_NO_BUILD:-}" ]; then
  echo "== bench-desktop: cargo build --release -p gatehouse-desktop -p gatehouse-background -p hello-tauri -p gatehouse-demo-server" >&2
  cargo build --release --locked -p gatehouse-desktop -p gatehouse-background -p hello-tauri -p gatehouse-demo-server >&2
fi
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin=$target_dir/release
out=$target_dir/bench-desktop
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-desktop.XXXXXX")
xvfb=
current=

# An app's process tree: its session (the app, WebKit's processes) and every live descendant
# of those, wherever it runs: Gatehouse starts stdio servers (the demo servers) in sessions
# of their own (setsid), so the session alone misses them. Zombies do not count.
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
# Which of the given pids still run (not zombies).
still_alive() {
  local pid state
  for pid in "$@"; do
    state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -z "$state" ] || [ "$state" = Z ] || echo "$pid"
  done
}
# Ends one app's process tree (the app and all it started), bounded.
stop_session() {
  local sid=$1 pids deadline
  # Taken before the app ends: its orphans are re-parented and leave the tree.
  # shellcheck disable=SC2046
  set -- $(tree_pids "$sid")
  # The window and the background host it started (which outlives a closed window).
  kill -TERM "$@" 2>/dev/null || true
  deadline=$((SECONDS + 10))
  while [ -n "$(still_alive "$@")" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  pids=$(still_alive "$@")
  if [ -n "$pids" ]; then
    echo "bench-desktop: still running 10 s after SIGTERM, killed: $pids" >&2
    kill -KILL $pids 2>/dev/null || true
  fi
  wait "$sid" 2>/dev/null || true
}
cleanup() {
  [ -z "$current" ] || stop_session "$current"
  if [ -n "$xvfb" ]; then
    kill -TERM "$xvfb" 2>/dev/null || true
    wait "$xvfb" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# One private X server for every launch; it picks a free display and tells us which.
Xvfb -displayfd 3 -screen 0 1280x900x24 -nolisten tcp 3>"$work/display" </dev/null >/dev/null 2>&1 &
xvfb=$!
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.1; done
[ -s "$work/display" ] || { echo "bench-desktop: Xvfb did not start" >&2; exit 1; }
display=:$(head -n1 "$work/display")

if [ "$drop_caches" = 1 ]; then
  [ -w /proc/sys/vm/drop_caches ] || { echo "bench-desktop: BENCH_DROP_CACHES=1 needs root" >&2; exit 2; }
  cache_note="page cache dropped before every launch"
else
  cache_note="warm page cache"
fi
# Rendering knobs the apps inherit (e.g. WEBKIT_DISABLE_COMPOSITING_MODE=1) belong in the report.
knobs=$(env | grep -E '^(WEBKIT_|GDK_|LIBGL_|GALLIUM_|MESA_|GATEHOUSE_DEMO_SERVER=)' | sort | tr '\n' ' ' || true)
[ -z "$knobs" ] || cache_note="$cache_note; ${knobs% }"

# The demo's admission in an audit log: prints how many servers were admitted (0 if none).
admissions() {
  [ -s "$1" ] || { echo 0; return; }
  python3 - "$1" <<'EOF'
import json, sys
count = 0
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        record = json.loads(line)
    except ValueError:
        continue
    if record.get("event") == "admission" and (record.get("data") or {}).get("status") == "admitted":
        count += 1
print(count)
EOF
}

# Memory of one process tree: "rss_kib pss_kib uss_kib processes", and per process lines to a
# file.
session_memory() { # sid breakdown-file
  local sid=$1 rss=0 pss=0 uss=0 n=0 pid r p u comm
  for pid in $(tree_pids "$sid"); do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    read -r p u < <(awk '/^Pss:/ {p = $2} /^Private_(Clean|Dirty):/ {u += $2}
      END {if (p != "") print p, u}' "/proc/$pid/smaps_rollup" 2>/dev/null || true)
    comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    [ -n "$r" ] && [ -n "$p" ] || continue
    rss=$((rss + r)); pss=$((pss + p)); uss=$((uss + u)); n=$((n + 1))
    printf '%s\t%s\t%s\t%s\n' "$comm" "$r" "$p" "$u" >>"$2"
  done
  echo "$rss $pss $uss $n"
}

# Where each process's memory is, by mapping (/proc/PID/smaps), appended to a file as rows
# "process pid mapping pss_kib uss_kib rss_kib"; the process is "app" for the app itself.
# Mappings: "(executable)" (the process's own binary), a library by file name, [heap],
# [stack], "anon: malloc arenas" (glibc's per-thread heaps: 64 MiB-aligned, followed by
# their reserved rest), "anon: thread stacks" (after a guard page), "anon: other" (the rest:
# mmap'd allocations, JIT, GC heaps), "shared memory" (memfd, SysV), other files by name.
mapping_memory() { # sid file pid...
  python3 - "$@" <<'EOF'
import collections, os, re, sys
sid, out, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
header = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")
rows = []
for pid in pids:
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
        exe = os.readlink(f"/proc/{pid}/exe")
        maps, fields = [], None
        for line in open(f"/proc/{pid}/smaps"):
            m = header.match(line)
            if m:
                fields = {}
                maps.append((int(m[1], 16), int(m[2], 16), m[3], m[4].strip(), fields))
            else:
                key, _, value = line.partition(":")
                value = value.split()
                if value and value[0].isdigit():
                    fields[key] = int(value[0])
    except OSError:
        continue
    total = collections.defaultdict(lambda: [0, 0, 0])
    for i, (start, end, perms, path, f) in enumerate(maps):
        before = maps[i - 1] if i else None
        after = maps[i + 1] if i + 1 < len(maps) else None
        if path == exe or path == exe + " (deleted)":
            name = "(executable)"
        elif path.startswith("/memfd:") or path.startswith("/SYSV"):
            name = "shared memory"
        elif path.startswith("/"):
            name = os.path.basename(path)
            name = name[: name.index(".so") + 3] if ".so" in name else name
        elif path:
            name = path
        elif (after and not after[3] and after[2].startswith("---") and after[0] == end
              and start % (64 << 20) == 0):
            name = "anon: malloc arenas"
        elif (before and not before[3] and before[2].startswith("---") and before[1] == start
              and before[1] - before[0] <= 65536):
            name = "anon: thread stacks"
        else:
            name = "anon: other"
        t = total[name]
        t[0] += f.get("Pss", 0)
        t[1] += f.get("Private_Clean", 0) + f.get("Private_Dirty", 0)
        t[2] += f.get("Rss", 0)
    role = "app" if pid == sid else comm
    rows += [f"{role}\t{pid}\t{name}\t{p}\t{u}\t{r}\n" for name, (p, u, r) in total.items() if r]
with open(out, "a") as file:
    file.writelines(rows)
EOF
}

# One measured launch: app-name run-number -> a row in $out/runs.tsv.
launch() {
  local name=$1 run=$2 program args=() dir ready audit t0 sid paint mtime exec_ms deadline admitted
  local mem rss pss uss procs servers
  case $name in
    gatehouse) program=$bin/gatehouse-desktop; args=(--demo) ;;
    hello) program=$bin/hello-tauri ;;
  esac
  dir=$work/$name-$run
  mkdir -p "$dir"/{config,data,cache}
  # The session's private runtime directory, where the window meets the background host it
  # starts (Gatehouse is two processes since the always-there issue; both are counted).
  mkdir -m 700 "$dir/run"
  ready=$dir/ready
  audit=$dir/data/gatehouse/audit.jsonl
  if [ "$drop_caches" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
  t0=$(date +%s%N)
  # setsid without a fork (a background job of a non-interactive shell leads no group), so
  # $! is the app and the session it leads holds everything it starts.
  env -u DBUS_SESSION_BUS_ADDRESS -u GATEHOUSE_DEMO -u GATEHOUSE_POLICY \
    DISPLAY="$display" XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/data" \
    XDG_CACHE_HOME="$dir/cache" XDG_RUNTIME_DIR="$dir/run" GATEHOUSE_READY_FILE="$ready" \
    setsid "$program" "${args[@]}" </dev/null >"$dir/log" 2>&1 &
  sid=$!
  current=$sid
  deadline=$((SECONDS + launch_timeout))
  until [ -s "$ready" ]; do
    if ! kill -0 "$sid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "bench-desktop: $name run $run: no first paint (log: $(tail -n 5 "$dir/log" | tr '\n' ' '))" >&2
      exit 1
    fi
    sleep 0.02
  done
  [ "$(ps -o sid= -p "$sid" | tr -d ' ')" = "$sid" ] ||
    { echo "bench-desktop: $name does not lead its own session" >&2; exit 1; }
  sleep 0.05 # the line is written whole by then
  paint=$(head -n1 "$ready")
  mtime=$(stat -c %.9Y "$ready")
  exec_ms=$(awk -v m="$mtime" -v t="$t0" 'BEGIN {printf "%.1f", (m - t / 1e9) * 1000}')
  admitted=-
  if [ "$name" = gatehouse ]; then
    until [ "$(admissions "$audit")" -gt 0 ]; do
      if ! kill -0 "$sid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
        echo "bench-desktop: gatehouse run $run: the demo server was not admitted" >&2
        exit 1
      fi
      sleep 0.05
    done
    admitted=$(python3 - "$audit" "$t0" <<'EOF'
import datetime, json, sys
t0 = int(sys.argv[2]) / 1e9
for line in open(sys.argv[1], encoding="utf-8"):
    record = json.loads(line)
    if record.get("event") == "admission" and record["data"].get("status") == "admitted":
        when = record["time"].replace("Z", "+00:00")
        # Python before 3.11 takes at most 6 fractional digits.
        head, _, frac = when.partition(".")
        digits, _, zone = frac.partition("+")
        when = datetime.datetime.fromisoformat(f"{head}.{digits[:6]}+{zone}").timestamp()
        print(f"{(when - t0) * 1000:.0f}")
        break
EOF
)
  fi
  sleep "$settle"
  mem=$(session_memory "$sid" "$dir/processes.tsv")
  read -r rss pss uss procs <<<"$mem"
  # shellcheck disable=SC2046
  mapping_memory "$sid" "$dir/mappings.tsv" $(tree_pids "$sid")
  servers=-
  [ "$name" != gatehouse ] || servers=$(admissions "$audit")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$run" "$paint" "$exec_ms" "$admitted" \
    "$servers" "$rss" "$pss" "$uss" "$procs" >>"$out/runs.tsv"
  sed "s/^/$name\t$run\t/" "$dir/processes.tsv" >>"$out/processes.tsv"
  sed "s/^/$name\t$run\t/" "$dir/mappings.tsv" >>"$out/mappings.tsv"
  printf 'bench-desktop: %-9s run %2s: paint %7s ms (exec %7s ms), admitted at %5s ms (%s), RSS %6.1f, PSS %6.1f, USS %6.1f MiB, %s processes\n' \
    "$name" "$run" "$paint" "$exec_ms" "$admitted" "$servers" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')" \
    "$(awk -v k="$pss" 'BEGIN {print k / 1024}')" "$(awk -v k="$uss" 'BEGIN {print k / 1024}')" \
    "$procs" >&2
  stop_session "$sid"
  current=
  rm -rf "$dir"
  sleep 1
}

printf 'app\trun\tstart_app_ms\tstart_exec_ms\tadmitted_ms\tservers_admitted\trss_kib\tpss_kib\tuss_kib\tprocesses\n' >"$out/runs.tsv"
printf 'app\trun\tprocess\trss_kib\tpss_kib\tuss_kib\n' >"$out/processes.tsv"
printf 'app\trun\tprocess\tpid\tmapping\tpss_kib\tuss_kib\trss_kib\n' >"$out/mappings.tsv"
echo "== bench-desktop: $runs launches of each on Xvfb $display ($cache_note)" >&2
launch gatehouse 0
launch hello 0
for run in $(seq "$runs"); do
  if [ $((run % 2)) -eq 1 ]; then
    launch gatehouse "$run"; launch hello "$run"
  else
    launch hello "$run"; launch gatehouse "$run"
  fi
done

# Summary (the warm-up launches, run 0, left out).
python3 - "$out/runs.tsv" "$out/processes.tsv" "$runs" "$cache_note" "$out/mappings.tsv" <<'EOF'
import csv, statistics, sys
runs_file, procs_file, n, cache = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
maps_file = sys.argv[5]
rows = [r for r in csv.DictReader(open(runs_file), delimiter="\t") if r["run"] != "0"]
procs = [r for r in csv.DictReader(open(procs_file), delimiter="\t") if r["run"] != "0"]
def col(app, key, scale=1.0):
    return [float(r[key]) * scale for r in rows if r["app"] == app and r[key] != "-"]
def cell(values, fmt):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"
mib = 1 / 1024
metrics = [
    ("start: main() → first paint (ms)", "start_app_ms", 1.0, "{:.0f}"),
    ("start: exec → first paint (ms)", "start_exec_ms", 1.0, "{:.0f}"),
    ("demo server admitted, from exec (ms)", "admitted_ms", 1.0, "{:.0f}"),
    ("resident, sum of PSS (MiB)", "pss_kib", mib, "{:.1f}"),
    ("resident, sum of VmRSS (MiB)", "rss_kib", mib, "{:.1f}"),
    ("private, sum of USS (MiB)", "uss_kib", mib, "{:.1f}"),
]
print(f"\n{n} launches of each, {cache}; median (min–max):\n")
print("| measure | Gatehouse (--demo) | hello-tauri | ratio of medians |")
print("|---|---:|---:|---:|")
for label, key, scale, fmt in metrics:
    g, h = col("gatehouse", key, scale), col("hello", key, scale)
    gc = cell(g, fmt) if g else "–"
    hc = cell(h, fmt) if h else "–"
    ratio = f"{statistics.median(g) / statistics.median(h):.2f}×" if g and h else "–"
    print(f"| {label} | {gc} | {hc} | {ratio} |")
print("\nMedian memory per process (MiB):\n")
print("| app | process | PSS | VmRSS | USS |")
print("|---|---|---:|---:|---:|")
for app in ("gatehouse", "hello"):
    names = sorted({p["process"] for p in procs if p["app"] == app})
    for name in names:
        # A process name can occur more than once per launch (two demo servers): sum per launch.
        per_run = {}
        for p in procs:
            if p["app"] == app and p["process"] == name:
                pss, rss, uss = per_run.get(p["run"], (0, 0, 0))
                per_run[p["run"]] = (pss + int(p["pss_kib"]), rss + int(p["rss_kib"]),
                                     uss + int(p["uss_kib"]))
        pss = statistics.median(v[0] for v in per_run.values()) * mib
        rss = statistics.median(v[1] for v in per_run.values()) * mib
        uss = statistics.median(v[2] for v in per_run.values()) * mib
        count = max(sum(1 for p in procs if p["app"] == app and p["process"] == name and p["run"] == r)
                    for r in per_run)
        label = f"{name} ×{count}" if count > 1 else name
        print(f"| {app} | {label} | {pss:.1f} | {rss:.1f} | {uss:.1f} |")
# Per mapping: the median over launches of each (process, mapping)'s PSS and USS, processes
# of one name summed per launch; the app itself is "app" in both.
maps = [r for r in csv.DictReader(open(maps_file), delimiter="\t") if r["run"] != "0"]
def per_mapping(app):
    sums, launches = {}, {m["run"] for m in maps if m["app"] == app}
    for m in maps:
        if m["app"] == app:
            kib = sums.setdefault((m["process"], m["mapping"]), {}).setdefault(m["run"], [0, 0])
            kib[0] += int(m["pss_kib"])
            kib[1] += int(m["uss_kib"])
    return {key: tuple(statistics.median(v.get(r, [0, 0])[i] for r in launches) * mib for i in (0, 1))
            for key, v in sums.items()}
gm, hm = per_mapping("gatehouse"), per_mapping("hello")
print("\nGatehouse against hello-tauri by process and mapping (medians, MiB; rows of 0.25 MiB or more):\n")
print("| process | mapping | Gatehouse PSS | hello PSS | PSS difference | USS difference |")
print("|---|---|---:|---:|---:|---:|")
processes = sorted({k[0] for k in gm} | {k[0] for k in hm}, key=lambda p: (p != "app", p))
for process in processes:
    keys = sorted({k for k in gm if k[0] == process} | {k for k in hm if k[0] == process},
                  key=lambda k: -(gm.get(k, (0, 0))[0] - hm.get(k, (0, 0))[0]))
    rest = [0.0] * 4
    for key in keys:
        (gp, gu), (hp, hu) = gm.get(key, (0, 0)), hm.get(key, (0, 0))
        if abs(gp - hp) >= 0.25 or abs(gu - hu) >= 0.25:
            print(f"| {process} | {key[1]} | {gp:.1f} | {hp:.1f} | {gp - hp:+.1f} | {gu - hu:+.1f} |")
        else:
            rest = [rest[0] + gp, rest[1] + hp, rest[2] + gp - hp, rest[3] + gu - hu]
    print(f"| {process} | everything else | {rest[0]:.1f} | {rest[1]:.1f} | {rest[2]:+.1f} | {rest[3]:+.1f} |")
g_start, h_start = statistics.median(col("gatehouse", "start_app_ms")), statistics.median(col("hello", "start_app_ms"))
g_pss = statistics.median(col("gatehouse", "pss_kib", mib))
ratio = g_start / h_start
print()
print(f"target start within 1.3× of hello-world: {ratio:.2f}× — {'met' if ratio <= 1.3 else 'MISSED'}")
print(f"target under 150 MB resident (PSS sum): {g_pss:.1f} MiB — {'met' if g_pss < 150 else 'MISSED'}")
EOF
echo "bench-desktop: per-launch rows in $out/runs.tsv, per-process memory in $out/processes.tsv, per mapping in $out/mappings.tsv" >&2
