#!/usr/bin/env node
// Soak driver: ONE AI client (the reference TypeScript MCP client, @modelcontextprotocol/sdk)
// making many checked calls through Gatehouse: the demo's `echo`, and every K-th call its
// `add`. scripts/soak.sh and crates/gatehouse-cli/tests/soak.rs run several at once.
//
//   node bench/ts-client/soak.mjs --calls N [--add-every K] [--in-flight C] [--label L]
//     [--echo NAME] [--add NAME] [--deadline-s S] -- <server command> [args...]
//   node bench/ts-client/soak.mjs --calls N ... -- http://127.0.0.1:PORT/mcp
//     (Streamable HTTP; the bearer token from $GATEWAY_TOKEN)
//
// --add-every K: every K-th call is `add` (default 10; 0: echo only). --in-flight C: calls
// outstanding at once on the one session (default 1, at most 64). --echo/--add: the tools'
// names (default demo__echo, demo__add: the demo through `gatehouse serve`). --deadline-s S:
// stop and fail when the calls take longer (default 3600).
//
// Every result is checked: echo must return exactly its (unique) message, add the sum. Prints
// ONE JSON line on stdout at the end:
//   {"label":L,"calls":N,"echo":E,"add":A,"failed":F,"first_failure":..,"seconds":..,
//    "calls_per_sec":..,"p50_us":..,"p99_us":..}
// and exits 1 when any call failed or the deadline passed. For HTTP the session is ended
// with DELETE, so the server closes it at once rather than when it times out.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function usage(msg) {
  if (msg) console.error(`soak: ${msg}`);
  console.error('usage: soak.mjs --calls N [--add-every K] [--in-flight C] [--label L] [--echo NAME] [--add NAME] [--deadline-s S] -- <server command> [args...] | <http URL>');
  process.exit(2);
}

function parseArgs(argv) {
  const sep = argv.indexOf('--');
  if (sep === -1) usage('missing "--" before the server');
  const opts = argv.slice(0, sep);
  const server = argv.slice(sep + 1);
  if (server.length === 0) usage('missing the server command or URL');
  const o = { calls: 0, addEvery: 10, inFlight: 1, label: 'soak', echo: 'demo__echo', add: 'demo__add', deadlineS: 3600 };
  const ints = { '--calls': 'calls', '--add-every': 'addEvery', '--in-flight': 'inFlight', '--deadline-s': 'deadlineS' };
  const strings = { '--label': 'label', '--echo': 'echo', '--add': 'add' };
  for (let i = 0; i < opts.length; i++) {
    const [flag, inline] = opts[i].split('=', 2);
    const value = inline ?? opts[++i];
    if (value === undefined) usage(`${flag} needs a value`);
    if (flag in ints) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) usage(`${flag} needs a non-negative integer, got ${value}`);
      o[ints[flag]] = n;
    } else if (flag in strings) {
      o[strings[flag]] = value;
    } else {
      usage(`unknown option ${flag}`);
    }
  }
  if (o.calls < 1) usage('--calls N (N >= 1) is required');
  if (o.inFlight < 1 || o.inFlight > 64) usage('--in-flight is 1 to 64');
  if (o.deadlineS < 1) usage('--deadline-s is at least 1');
  return { ...o, command: server[0], args: server.slice(1) };
}

// Nearest-rank percentile of an ascending array.
function percentile(sorted, p) {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

const round1 = (x) => Math.round(x * 10) / 10;
const textOf = (result) => (result?.content ?? []).find((c) => c.type === 'text')?.text;

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const http = /^https?:\/\//.test(o.command);
  const transport = http
    ? new StreamableHTTPClientTransport(new URL(o.command), {
      requestInit: process.env.GATEWAY_TOKEN ? { headers: { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` } } : {},
    })
    : new StdioClientTransport({ command: o.command, args: o.args, env: process.env, stderr: 'inherit' });
  const client = new Client({ name: 'gatehouse-soak', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);

  const deadline = Date.now() + o.deadlineS * 1000;
  const samplesUs = new Float64Array(o.calls);
  let next = 0;
  let echo = 0;
  let add = 0;
  let failed = 0;
  let firstFailure = null;
  let late = false;
  const fail = (i, what) => {
    failed += 1;
    if (firstFailure === null) firstFailure = `call ${i}: ${what}`;
  };
  // One checked call: `add` every K-th, `echo` of a message unique to this client and call.
  const call = async (i) => {
    const isAdd = o.addEvery > 0 && i % o.addEvery === o.addEvery - 1;
    const request = isAdd
      ? { name: o.add, arguments: { a: i, b: 0.5 } }
      : { name: o.echo, arguments: { message: `${o.label} ${i}` } };
    const expected = isAdd ? String(i + 0.5) : `${o.label} ${i}`;
    const t0 = process.hrtime.bigint();
    try {
      const result = await client.callTool(request, undefined, { timeout: 60000 });
      const got = textOf(result);
      if (result.isError || got !== expected) fail(i, `expected ${JSON.stringify(expected)}, got ${JSON.stringify(result).slice(0, 300)}`);
      else if (isAdd) add += 1;
      else echo += 1;
    } catch (error) {
      fail(i, `${error?.message ?? error}${error?.cause ? ` (${error.cause?.message ?? error.cause})` : ''}`.slice(0, 300));
    }
    samplesUs[i] = Number(process.hrtime.bigint() - t0) / 1000;
  };
  // C workers share one counter: at most C calls outstanding, N in all.
  const worker = async () => {
    while (next < o.calls) {
      if (Date.now() > deadline) {
        late = true;
        return;
      }
      const i = next++;
      await call(i);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: o.inFlight }, worker));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;

  if (http) {
    try {
      await transport.terminateSession();
    } catch (error) {
      console.error(`soak: ending the HTTP session: ${error?.message ?? error}`);
    }
  }
  await client.close();

  const made = Math.min(next, o.calls);
  const us = Array.from(samplesUs.subarray(0, made)).sort((a, b) => a - b);
  if (late) fail(made, `the deadline (${o.deadlineS} s) passed after ${made} of ${o.calls} calls`);
  console.log(JSON.stringify({
    label: o.label,
    calls: made,
    echo,
    add,
    failed,
    first_failure: firstFailure,
    seconds: round1(seconds),
    calls_per_sec: round1(made / seconds),
    p50_us: us.length ? round1(percentile(us, 50)) : null,
    p99_us: us.length ? round1(percentile(us, 99)) : null,
  }));
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(`soak: ${err?.stack ?? err}${err?.cause ? `\ncaused by: ${err.cause?.stack ?? err.cause}` : ''}`);
  process.exit(1);
});
