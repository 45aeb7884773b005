#!/usr/bin/env bash
# The CLI tour: installs what is missing, builds, and shows Gatehouse working on the
# embedded demo through the headless CLI. Demo mode (--demo) trusts
# the DEMO-ONLY bundle in trust-roots/demo/, which admits the demo server over stdio (bound
# to its executable's SHA-256) and over Streamable HTTP (its signed attestation). Then: the
# closed tool allow-list, a tampered attestation refused, elicitations (a form, a refused
# password form, a refused phishing URL, the URL flow with its completion), and the audit log
# of it all.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --workspace --locked --quiet
bin=target/debug
gatehouse=$bin/gatehouse
demo=$bin/gatehouse-demo-server
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
# The demo's decisions go to a scratch audit log, not yours.
export GATEHOUSE_AUDIT=$work/audit.jsonl
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@" || true; }

step "$gatehouse" --demo trust
step "$gatehouse" --demo connect demo
step "$gatehouse" --demo tools demo
step "$gatehouse" --demo call demo add --args '{"a": 2, "b": 3}'
step "$gatehouse" --demo call demo slow --args '{"steps": 3, "delay_ms": 200}'
# Not on the allow-list, and a look-alike of a tool that is: denied, nothing sent.
step "$gatehouse" --demo call demo fail
step "$gatehouse" --demo call demo Echo
step "$gatehouse" --demo --era 2025-11-25 trace demo --call echo --args '{"message": "hello"}'

serve() { # serve NAME ARGS…: start the demo server over HTTP, set $url
  local name=$1; shift
  RUST_LOG=warn "$demo" --http 127.0.0.1:0 "$@" > "$work/$name.out" 2>/dev/null &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/$name.out" && break; sleep 0.05; done
  url=$(sed -n 's/^listening on //p' "$work/$name.out")
}
serve signed
step "$gatehouse" --demo attest fetch "$url"
echo
step "$gatehouse" --demo connect --url "$url"
step "$gatehouse" --demo call --url "$url" echo --args '{"message": "over Streamable HTTP"}'
serve tampered --attestation tampered
# The same document with its publisher changed after signing: refused, bad_signature.
step "$gatehouse" --demo connect --url "$url"

# Elicitations, answered from files here (without --answers they are asked on the terminal).
# A form with every field type: the banner names the verified server, defaults pre-filled.
echo '[{"mode": "form", "action": "accept", "content": {"name": "Ada Lovelace", "date": "2026-12-24"}}]' > "$work/book.json"
step "$gatehouse" --demo call demo book_table --answers "$work/book.json"
# A form asking for a password: refused by policy, the server only gets "decline".
step "$gatehouse" --demo call demo ask_password --answers "$work/book.json"
# A phishing URL (userinfo): refused before any consent button, nothing opened.
echo '[{"mode": "url", "action": "accept"}]' > "$work/open.json"
step "$gatehouse" --demo call demo open_link --args '{"url": "https://github.com@evil.example/login"}' --answers "$work/open.json"
# The URL flow: consent, then the system browser ($BROWSER; here a recorder that submits the
# demo's page like a person would), then the completion lands on the prompt.
export BROWSER=$PWD/tests/fixtures/browser_recorder.py GATEHOUSE_BROWSER_VISIT=submit
step "$gatehouse" --demo --era 2025-11-25 call demo connect_account_required --answers "$work/open.json"
step "$gatehouse" --demo --era 2026-07-28 call demo connect_account --answers "$work/open.json"
# Completions for ids the server never issued: ignored and audited.
step "$gatehouse" --demo call demo spoof_completion

step "$gatehouse" audit show
step "$gatehouse" audit verify
