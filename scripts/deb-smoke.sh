#!/usr/bin/env bash
# Smoke test of the desktop .deb: scripts/deb-smoke.sh [--purge] [DEB]
#
# Installs the package (dpkg -i; apt-get install -f only when dependencies are missing),
# checks that it installed the app, its desktop entry and icon, the demo server at
# /usr/lib/gatehouse/gatehouse-demo-server and the in-sandbox init at
# /usr/lib/gatehouse/gatehouse-sandbox-init (answering --self-check) with bwrap, then starts the installed app in demo mode on a
# private X display (xvfb-run -a) with its own config, data and cache directories, and waits
# (at most 90 s) for its first painted frame (GATEHOUSE_READY_FILE) and for its audit log to
# record the packaged demo server admitted. Then it stops the window (SIGTERM; xvfb-run stops
# its X server), checks that the background host it started (/usr/bin/gatehouse-background)
# still serves, quits it with `gatehouse-desktop --quit`, and checks that nothing it started
# is left running. The last line is PASS or FAIL; the exit status is non-zero on failure.
#
# DEB defaults to the newest package scripts/package-deb.sh wrote. --purge removes the
# package afterwards (by default it stays installed).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packaged_demo=/usr/lib/gatehouse/gatehouse-demo-server
packaged_background=/usr/bin/gatehouse-background
packaged_sandbox_init=/usr/lib/gatehouse/gatehouse-sandbox-init
timeout_s=90

purge=false
deb=
for arg in "$@"; do
  case $arg in
    --purge) purge=true ;;
    -*) echo "usage: scripts/deb-smoke.sh [--purge] [DEB]" >&2; exit 2 ;;
    *) [ -z "$deb" ] || { echo "usage: scripts/deb-smoke.sh [--purge] [DEB]" >&2; exit 2; }; deb=$arg ;;
  esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/deb-smoke.XXXXXX")
launcher=
session=
app=
keep_work=false
pkg=

# Ends whatever is still running in the app's session (its own process group leaders, the
# demo servers, included), bounded; zombies are dead already and do not count.
alive_in_session() {
  [ -n "$session" ] || return 0
  ps -s "$session" -o stat=,pid=,args= 2>/dev/null | awk '$1 !~ /^Z/ {$1=""; print substr($0, 2)}'
}
kill_session() {
  local pids
  pids=$(alive_in_session | awk '{print $1}')
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}
failed=false
cleanup() {
  local status=$?
  if [ "$status" -ne 0 ] && [ "$failed" = false ]; then
    [ -z "$(ls -A "$work")" ] || { keep_work=true; echo "deb-smoke: logs kept in $work" >&2; }
    echo "FAIL deb-smoke: unexpected error (exit status $status; see above)"
  fi
  # Still running (a failure on the way): SIGTERM the app first, so that xvfb-run stops its
  # X server and removes its lock; then whatever is left gets SIGKILL.
  if [ -n "$launcher" ] && kill -0 "$launcher" 2>/dev/null; then
    [ -z "$app" ] || kill -TERM "$app" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while kill -0 "$launcher" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$launcher" 2>/dev/null || true
  fi
  kill_session
  if [ "$purge" = true ] && [ -n "$pkg" ]; then
    $sudo dpkg --purge "$pkg" >/dev/null 2>&1 || true
  fi
  [ "$keep_work" = true ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "deb-smoke: line $LINENO failed: $BASH_COMMAND" >&2' ERR

fail() {
  failed=true
  [ -z "$(ls -A "$work")" ] || keep_work=true
  echo "deb-smoke: $*" >&2
  for log in "$work/app.log" "$work"/data/gatehouse/logs/*.log; do
    [ -s "$log" ] || continue
    echo "--- ${log#"$work"/} (last 20 lines)" >&2
    tail -n 20 "$log" >&2
  done
  [ "$keep_work" = false ] || echo "deb-smoke: logs kept in $work" >&2
  echo "FAIL deb-smoke: $*"
  exit 1
}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if [ -z "$deb" ]; then
  target_dir=$(cd "$root" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  deb=$(find "$target_dir"/{debug,release}/bundle/deb -maxdepth 1 -name '*.deb' \
    -printf '%T@ %p\n' 2>/dev/null | sort -rn | head -n1 | cut -d' ' -f2- || true)
  [ -n "$deb" ] || fail "no .deb found: run scripts/package-deb.sh [--debug] first, or pass DEB"
fi
[ -f "$deb" ] || fail "$deb does not exist"
pkg=$(dpkg-deb -f "$deb" Package) || fail "$deb is not a Debian package"
echo "deb-smoke: installing $deb (package $pkg)" >&2

# Install. dpkg leaves the package unconfigured when a dependency is missing: only then ask
# apt to bring the dependencies.
if ! $sudo dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
  if grep -q "dependency problems" "$work/dpkg.log"; then
    echo "deb-smoke: dependencies missing; apt-get install -f" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -f -y --no-install-recommends \
      >"$work/apt.log" 2>&1 || { cat "$work/dpkg.log" "$work/apt.log" >&2; fail "apt-get install -f failed"; }
  else
    cat "$work/dpkg.log" >&2
    fail "dpkg -i $deb failed"
  fi
fi
status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
[ "$status" = "install ok installed" ] || fail "$pkg is not installed after dpkg -i (status: ${status:-none})"

# What it installed.
files=$(dpkg -L "$pkg")
desktop=$(grep -x '/usr/share/applications/[^/]*\.desktop' <<<"$files" | head -n1 || true)
[ -n "$desktop" ] || fail "$pkg installs no desktop entry under /usr/share/applications"
exec_line=$(sed -n 's/^Exec=//p' "$desktop" | head -n1)
icon=$(sed -n 's/^Icon=//p' "$desktop" | head -n1)
binary=/usr/bin/${exec_line%% *}
[ -n "$exec_line" ] && grep -qx "$binary" <<<"$files" && [ -x "$binary" ] ||
  fail "the desktop entry's Exec=$exec_line is not an installed /usr/bin program of $pkg"
[ -n "$icon" ] && grep -q "^/usr/share/icons/hicolor/[^/]*/apps/$icon\.png$" <<<"$files" ||
  fail "the desktop entry's Icon=$icon is not an installed hicolor icon of $pkg"
grep -qx "$packaged_demo" <<<"$files" && [ -x "$packaged_demo" ] ||
  fail "$pkg does not install an executable $packaged_demo"
grep -qx "$packaged_background" <<<"$files" && [ -x "$packaged_background" ] ||
  fail "$pkg does not install an executable $packaged_background"
grep -qx "$packaged_sandbox_init" <<<"$files" && [ -x "$packaged_sandbox_init" ] ||
  fail "$pkg does not install an executable $packaged_sandbox_init"
command -v bwrap >/dev/null 2>&1 || fail "bwrap is missing after installing $pkg (it depends on bubblewrap)"
# The installed init answers its self-check outside a sandbox (one JSON line, exit 0).
"$packaged_sandbox_init" --self-check | grep -q '"net_ns":"net:\[' ||
  fail "$packaged_sandbox_init --self-check did not report its namespaces"
echo "deb-smoke: installed $binary, $desktop, icon $icon ($(grep -c "/apps/$icon\.png$" <<<"$files") sizes), $packaged_demo, $packaged_background, $packaged_sandbox_init" >&2

# Run it: demo mode, fresh directories, no session bus (the single-instance lock and the
# keychain stay out of it), nothing pointing at a demo server elsewhere.
mkdir -p "$work"/{config,data,cache}
# The session's private runtime directory, where the window and its background host meet.
mkdir -m 700 "$work/run"
ready=$work/ready
audit=$work/data/gatehouse/audit.jsonl
# setsid: the app and everything it starts share one session we can account for. Output goes
# to a file, never a pipe: a child holding a pipe open would keep a reader waiting.
setsid -w xvfb-run -a -s "-screen 0 1280x900x24 -nolisten tcp" \
  env -u DBUS_SESSION_BUS_ADDRESS -u GATEHOUSE_DEMO_SERVER -u GATEHOUSE_DEMO -u GATEHOUSE_POLICY \
  XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_CACHE_HOME="$work/cache" \
  XDG_RUNTIME_DIR="$work/run" GATEHOUSE_READY_FILE="$ready" \
  sh -c 'echo $$ > "$0"; exec "$@"' "$work/app.pid" "$binary" --demo \
  </dev/null >"$work/app.log" 2>&1 &
launcher=$!

# The admission of the packaged demo server, from the audit log's JSON lines.
admitted() {
  [ -s "$audit" ] || return 1
  python3 - "$audit" "$packaged_demo" <<'EOF'
import json, sys
path, program = sys.argv[1], sys.argv[2]
for line in open(path, encoding="utf-8"):
    try:
        record = json.loads(line)
    except ValueError:
        continue  # a line being written
    data = record.get("data") or {}
    if (record.get("event") == "admission" and data.get("status") == "admitted"
            and data.get("command") == program):
        print(f'{data.get("name")} admitted by {data.get("bundle")} (seq {record.get("seq")})')
        sys.exit(0)
sys.exit(1)
EOF
}

start=$SECONDS
paint=
admission=
while [ $((SECONDS - start)) -lt $timeout_s ]; do
  if [ -z "$app" ] && [ -s "$work/app.pid" ]; then
    app=$(cat "$work/app.pid")
    session=$(ps -o sid= -p "$app" | tr -d ' ' || true)
    echo "deb-smoke: $binary --demo runs as pid $app under xvfb-run (session $session)" >&2
  fi
  [ -n "$paint" ] || paint=$(head -n1 "$ready" 2>/dev/null || true)
  [ -n "$admission" ] || admission=$(admitted || true)
  [ -n "$paint" ] && [ -n "$admission" ] && break
  if ! kill -0 "$launcher" 2>/dev/null; then
    fail "the app exited before it was ready (first paint: ${paint:-none}; admission: ${admission:-none})"
  fi
  sleep 0.2
done
[ -n "$paint" ] || fail "no first paint within ${timeout_s} s (GATEHOUSE_READY_FILE stayed empty)"
[ -n "$admission" ] || fail "no admission of $packaged_demo in the audit log within ${timeout_s} s"
echo "deb-smoke: first paint after $paint ms; $admission" >&2

# Stop the window: SIGTERM the app; xvfb-run then stops Xvfb and exits. WebKit's processes
# must follow within a few seconds; the background host (and the demo servers it runs) stay.
[ -n "$app" ] || fail "the app's pid was not recorded"
kill -TERM "$app" 2>/dev/null || true
deadline=$((SECONDS + 15))
while kill -0 "$launcher" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
if kill -0 "$launcher" 2>/dev/null; then
  fail "xvfb-run did not exit within 15 s of SIGTERM to the app; still running: $(alive_in_session | tr '\n' ';')"
fi
wait "$launcher" 2>/dev/null || true
launcher=
grep -q "^[0-9]* $packaged_background" <<<"$(alive_in_session)" ||
  fail "the background host ($packaged_background) did not keep serving after the window closed"
[ -S "$work/run/gatehouse/desk.sock" ] || fail "the background host's window socket is gone"
# Quit the background host as a person would from a terminal; it says what stopped.
quit_said=$(env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$work/run" "$binary" --quit 2>&1) ||
  fail "$binary --quit failed: $quit_said"
echo "deb-smoke: $quit_said" >&2
[ ! -e "$work/run/gatehouse/desk.sock" ] || fail "the window socket is left after the quit"
deadline=$((SECONDS + 10))
while [ -n "$(alive_in_session)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
left=$(alive_in_session)
[ -z "$left" ] || fail "left behind after the app stopped: $(tr '\n' ';' <<<"$left")"

echo "PASS deb-smoke: $pkg $(dpkg-query -W -f='${Version}' "$pkg") installed; $binary --demo painted its first frame in $paint ms and admitted $packaged_demo; the background host served on after the window closed and quit cleanly"
