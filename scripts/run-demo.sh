#!/usr/bin/env bash
# The run command: installs what is missing, builds, and opens the Gatehouse desktop app on the
# embedded demo (the DEMO-ONLY trust root and the demo server, in both protocol eras), with
# nothing else configured (the window starts its background host, gatehouse-background, built
# beside it; its servers run confined by the sandbox init built beside it too). The demo's decisions are recorded in your audit log like any other.
# No display (a server, CI)? It runs under xvfb-run instead, which shows nothing: use
# scripts/cli-tour.sh for a terminal walk-through of the same demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --locked --quiet -p gatehouse-desktop -p gatehouse-background -p gatehouse-demo-server -p gatehouse-sandbox
app=target/debug/gatehouse-desktop
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$app" --demo "$@"
fi
echo "run-demo: no display; running under xvfb-run (nothing will be visible)" >&2
exec xvfb-run -a "$app" --demo "$@"
