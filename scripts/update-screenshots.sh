#!/usr/bin/env bash
# Copies the screenshots the README shows from the last end-to-end run (target/e2e-screenshots)
# to docs/screenshots. Take them first with `cargo test -p gatehouse-desktop-e2e`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The README's pictures ("## The desktop app"), by the name the e2e tests save them under.
names=(
  server-detail
  import-report
  add-server-unattested
  tool-blocked-by-pin
  prompt-form
  prompt-form-invalid
  tool-result
  prompt-refused-sensitive
  prompt-markup-as-text
  prompt-url
  prompt-url-waiting
  prompt-url-completed
  prompt-refused-punycode
  audit
  traffic-copied
  settings
  prompt-from-ai-client
  clients
  sign-in
  resources-list
  resources-guide
  prompts
)

from=target/e2e-screenshots
to=docs/screenshots

# Check them all before copying any, so docs/screenshots is never half from one run.
for name in "${names[@]}"; do
  if [[ ! -f "$from/$name.png" ]]; then
    echo "update-screenshots: $from/$name.png is missing; take the screenshots with" >&2
    echo "  cargo test -p gatehouse-desktop-e2e" >&2
    exit 1
  fi
done

mkdir -p "$to"
for name in "${names[@]}"; do
  cp "$from/$name.png" "$to/$name.png"
  echo "$to/$name.png"
done
