#!/usr/bin/env bash
# Installs what Gatehouse's build, run and test commands need, only where it is missing.
# Idempotent; safe to run on every invocation. Sources: Debian packages (apt-get), the npm
# registry (npm ci against package-lock.json, which pins the conformance suite, the
# reference server, the TypeScript SDK and a Node 22 binary), crates.io (cargo).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: command -> package.
declare -A needs=(
  [python3]=python3
  [dbus-run-session]=dbus-bin
  [dbus-daemon]=dbus-daemon
  [gnome-keyring-daemon]=gnome-keyring
  [secret-tool]=libsecret-tools
  [npm]=npm
  [cc]=build-essential
  [pkg-config]=pkg-config
)
missing=()
for cmd in "${!needs[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${needs[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

command -v cargo >/dev/null 2>&1 || { echo "install-deps: cargo is missing; install Rust (rustup) first" >&2; exit 2; }

# npm tools, exactly as locked. Re-run only when the lockfile changed since the last install.
stamp=node_modules/.gatehouse-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: npm ci (conformance suite, server-everything, TypeScript SDK, Node 22)" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
