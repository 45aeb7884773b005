#!/usr/bin/env node
// A scripted AI client for the gateway tests: the reference TypeScript MCP client
// (@modelcontextprotocol/sdk Client + StdioClientTransport) driving `gatehouse serve`.
//
//   node tests/gateway/ts-client.mjs '<steps JSON>' -- <server command> [args...]
//   node tests/gateway/ts-client.mjs '<steps JSON>' -- http://HOST:PORT/mcp
//     (Streamable HTTP; the bearer token, if any, from $GATEWAY_TOKEN)
//
// Steps, run in order; one JSON line per step on stdout:
//   {"op":"list"}                                   -> {"op":"list","names":[...],"tools":[...]}
//   {"op":"call","name":N,"arguments":{},"abortAfterMs":M?,"progress":true?}
//                                                   -> {"op":"call","result":{...},"progress":[...]} or {"op":"call","error":{"code":C,"message":M}}
//     (progress: asks for progress and lists the notifications received, in order)
//   {"op":"waitListChanged","atLeast":K,"timeoutMs":T}
//                                                   -> {"op":"waitListChanged","seen":true|false,"count":C}
//     (seen: at least K notifications/tools/list_changed arrived since the last mark, or the start)
//   {"op":"mark"}                                   -> {"op":"mark","count":C}
//   {"op":"prompts"}                                -> {"op":"prompts","names":[...],"prompts":[...]}
//   {"op":"getPrompt","name":N,"arguments":{}}      -> {"op":"getPrompt","result":{...}} or {"op":"getPrompt","error":{...}}
//   {"op":"resources"}                              -> {"op":"resources","uris":[...],"templates":[...]}
//   {"op":"read","uri":U}                           -> {"op":"read","result":{...}} or {"op":"read","error":{...}}
//   {"op":"complete","ref":{...},"argument":{"name","value"}}
//                                                   -> {"op":"complete","values":[...]} or {"op":"complete","error":{...}}
// A call gives up after TS_CLIENT_TIMEOUT_MS (default 120000) milliseconds.
// The client declares no capabilities (no sampling, roots or elicitation). The server's
// stderr is passed through; the environment is passed whole (the SDK's default keeps only
// a few variables).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (sep !== 1 || argv.length < 3) {
  console.error("usage: ts-client.mjs '<steps JSON>' -- <server command> [args...]");
  process.exit(2);
}
const steps = JSON.parse(argv[0]);
const [command, ...args] = argv.slice(2);

const client = new Client({ name: 'ts-sdk-test-client', version: '1.0.0' }, { capabilities: {} });
let listChanged = 0;
let mark = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
const transport = /^https?:\/\//.test(command)
  ? new StreamableHTTPClientTransport(new URL(command), {
    requestInit: process.env.GATEWAY_TOKEN ? { headers: { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` } } : {},
  })
  : new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
await client.connect(transport);

const out = (line) => process.stdout.write(JSON.stringify(line) + '\n');
for (const step of steps) {
  if (step.op === 'list') {
    const { tools } = await client.listTools();
    out({ op: 'list', names: tools.map((t) => t.name), tools });
  } else if (step.op === 'call') {
    const controller = new AbortController();
    if (step.abortAfterMs) setTimeout(() => controller.abort('the test gave up'), step.abortAfterMs);
    const progress = [];
    const onprogress = step.progress ? (p) => progress.push(p) : undefined;
    try {
      const result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined,
        { signal: controller.signal, timeout: Number(process.env.TS_CLIENT_TIMEOUT_MS ?? 120000), onprogress });
      out(step.progress ? { op: 'call', result, progress } : { op: 'call', result });
    } catch (error) {
      out({ op: 'call', error: { code: error.code ?? null, message: String(error.message ?? error) } });
    }
  } else if (step.op === 'waitListChanged') {
    const atLeast = step.atLeast ?? 1;
    const deadline = Date.now() + (step.timeoutMs ?? 5000);
    while (listChanged - mark < atLeast && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    out({ op: 'waitListChanged', seen: listChanged - mark >= atLeast, count: listChanged });
  } else if (step.op === 'mark') {
    mark = listChanged;
    out({ op: 'mark', count: mark });
  } else if (step.op === 'prompts') {
    const { prompts } = await client.listPrompts();
    out({ op: 'prompts', names: prompts.map((p) => p.name), prompts });
  } else if (step.op === 'resources') {
    const { resources } = await client.listResources();
    const { resourceTemplates } = await client.listResourceTemplates();
    out({ op: 'resources', uris: resources.map((r) => r.uri), templates: resourceTemplates.map((t) => t.uriTemplate) });
  } else if (['getPrompt', 'read', 'complete'].includes(step.op)) {
    try {
      if (step.op === 'getPrompt') {
        out({ op: step.op, result: await client.getPrompt({ name: step.name, arguments: step.arguments ?? {} }) });
      } else if (step.op === 'read') {
        out({ op: step.op, result: await client.readResource({ uri: step.uri }) });
      } else {
        const { completion } = await client.complete({ ref: step.ref, argument: step.argument });
        out({ op: step.op, values: completion.values });
      }
    } catch (error) {
      out({ op: step.op, error: { code: error.code ?? null, message: String(error.message ?? error) } });
    }
  } else {
    console.error(`ts-client: unknown step ${JSON.stringify(step)}`);
    process.exit(2);
  }
}
await client.close();
