#!/usr/bin/env bash
# Builds the desktop app's Debian package: scripts/package-deb.sh [--debug]
#
# The release profile by default; --debug for the dev profile (fast, for CI's smoke test).
# Builds the demo server in the same profile, then `cargo tauri build --bundles deb` (tauri-cli,
# installed by scripts/install-deps.sh), which builds gatehouse-desktop with
# tauri/custom-protocol and packs it with its icons and a desktop entry. The demo server goes
# into the package at /usr/lib/gatehouse/gatehouse-demo-server (where demo mode looks for it,
# gatehouse_host::demo::PACKAGED_DEMO_SERVER), and the background host at
# /usr/bin/gatehouse-background (beside the window, where the window looks for it), and the
# in-sandbox init at /usr/lib/gatehouse/gatehouse-sandbox-init (where the host looks for it
# when it confines a server; bubblewrap, which runs it, is in the package's Depends): their
# sources differ per profile, so the mapping is merged into tauri.conf.json's
# bundle.linux.deb.files here, through tauri-cli's --config.
# Build output goes to stderr; the last line on stdout is the .deb's path. Cargo does the
# caching: a second run rebuilds nothing and only re-packs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

usage() { echo "usage: scripts/package-deb.sh [--debug]" >&2; exit 2; }
profile=release
cargo_profile=(--release)
tauri_profile=()
case $# in
  0) ;;
  1) [ "$1" = --debug ] || usage; profile=debug; cargo_profile=(); tauri_profile=(--debug) ;;
  *) usage ;;
esac

if ! cargo tauri --version >/dev/null 2>&1; then
  echo "package-deb: tauri-cli (cargo tauri) is missing: run scripts/install-deps.sh" >&2
  exit 2
fi

# Where cargo puts its output (honours CARGO_TARGET_DIR and .cargo/config.toml).
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
out=$target_dir/$profile

echo "== package-deb: gatehouse-demo-server, gatehouse-background, gatehouse-sandbox-init ($profile)" >&2
cargo build --locked "${cargo_profile[@]}" -p gatehouse-demo-server -p gatehouse-background \
  -p gatehouse-sandbox >&2
demo=$out/gatehouse-demo-server
[ -x "$demo" ] || { echo "package-deb: $demo was not built" >&2; exit 1; }
background=$out/gatehouse-background
[ -x "$background" ] || { echo "package-deb: $background was not built" >&2; exit 1; }
sandbox_init=$out/gatehouse-sandbox-init
[ -x "$sandbox_init" ] || { echo "package-deb: $sandbox_init was not built" >&2; exit 1; }

# The demo server goes in without its debug info (release: 84 MB -> 11 MB; the symbols stay
# for backtraces): demo mode hashes the executable at every start, once for the demo bundle
# and once per admission, and on the unstripped file that alone costs about half a second.
stage=$out/package-deb
staged=$stage/gatehouse-demo-server
if [ ! -f "$staged" ] || [ "$demo" -nt "$staged" ]; then
  mkdir -p "$stage"
  strip --strip-debug -o "$staged.tmp" "$demo"
  mv -f "$staged.tmp" "$staged"
fi

# tauri-cli runs from src-tauri and resolves the files' sources from there: a relative path
# keeps this checkout's location out of the config (which is compiled into the app).
packaged=/usr/lib/gatehouse/gatehouse-demo-server
source=$(realpath --relative-to="$root/src-tauri" "$staged")
packaged_background=/usr/bin/gatehouse-background
background_source=$(realpath --relative-to="$root/src-tauri" "$background")
packaged_sandbox_init=/usr/lib/gatehouse/gatehouse-sandbox-init
sandbox_init_source=$(realpath --relative-to="$root/src-tauri" "$sandbox_init")
config=$(printf '{"bundle":{"linux":{"deb":{"files":{"%s":"%s","%s":"%s","%s":"%s"}}}}}' \
  "$packaged" "$source" "$packaged_background" "$background_source" \
  "$packaged_sandbox_init" "$sandbox_init_source")

echo "== package-deb: cargo tauri build ${tauri_profile[*]} --bundles deb" >&2
bundle_dir=$out/bundle/deb
started=$(date +%s)
(
  cd src-tauri
  cargo tauri build "${tauri_profile[@]}" --bundles deb --ci --config "$config" -- --locked
) >&2

# The package tauri-cli just wrote: the newest .deb in its bundle directory.
deb=$(find "$bundle_dir" -maxdepth 1 -name '*.deb' -newermt "@$((started - 1))" -printf '%T@ %p\n' |
  sort -rn | head -n1 | cut -d' ' -f2-)
[ -n "$deb" ] || { echo "package-deb: no .deb was written to $bundle_dir" >&2; exit 1; }

# What the package must hold, checked before anyone installs it.
contents=$(dpkg-deb -c "$deb" | awk '{sub(/^\.?\//, "", $NF); print "/" $NF}')
binary=$(sed -n 's/.*"mainBinaryName": *"\([^"]*\)".*/\1/p' src-tauri/tauri.conf.json)
missing=()
for want in "/usr/bin/$binary" "$packaged" "$packaged_background" "$packaged_sandbox_init" \
  "/usr/share/applications/[^/]*\.desktop" \
  "/usr/share/icons/hicolor/[^/]*/apps/$binary\.png"; do
  grep -qx -- "$want" <<<"$contents" || missing+=("$want")
done
# Confinement runs every admitted server under bubblewrap: the package must pull it in.
depends=$(dpkg-deb -f "$deb" Depends)
grep -qw bubblewrap <<<"$depends" || missing+=("a dependency on bubblewrap (Depends: $depends)")
maintainer=$(dpkg-deb -f "$deb" Maintainer)
[[ $maintainer =~ \<[^@\>]+@[^\>]+\>$ ]] || missing+=("a Maintainer with an address (it is: $maintainer)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "package-deb: $deb lacks: ${missing[*]}" >&2
  exit 1
fi
echo "$deb"
