// Helper for scripts/conformance.sh: validates tests/conformance/baseline.yml and compares
// the conformance runner's results with it. Run with the Node 22 binary from node_modules.
//
//   node scripts/conformance-eval.mjs validate <baseline.yml> <spec>/<scenario>...
//   node scripts/conformance-eval.mjs evaluate <baseline.yml> <manifest.jsonl> <summary.json>
//
// Exit codes: 0 = results match the baseline, 1 = unexpected failure(s) or stale baseline
// entries, 2 = invalid baseline / usage error.
//
// The YAML parser is the `yaml` package the conformance runner itself depends on (it is in
// package-lock.json as a transitive dependency of @modelcontextprotocol/conformance).
import { readFileSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';

const SPECS = ['2025-03-26', '2025-11-25', '2026-07-28'];

// Pseudo check ids this script synthesizes (they can be baselined like real check ids).
const PSEUDO = {
  runnerError: 'runner-error', // runner crashed, or wrote no checks.json (e.g. scenario skipped)
  clientExit: 'client-exit', // client timed out, or exited non-zero where the scenario forbids it
  noScoredChecks: 'no-scored-checks', // no check ended SUCCESS or FAILURE/WARNING: nothing was exercised
};

function die(msg, code = 2) {
  console.error(`conformance: ${msg}`);
  process.exit(code);
}

function loadBaseline(path, known) {
  let doc;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    die(`cannot read baseline ${path}: ${e.message}`);
  }
  if (doc === null || doc === undefined) doc = { expected_failures: [] };
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    die(`${path}: top level must be a mapping with the key 'expected_failures'`);
  }
  const extra = Object.keys(doc).filter((k) => k !== 'expected_failures');
  if (extra.length) die(`${path}: unknown top-level key(s): ${extra.join(', ')}`);
  const list = doc.expected_failures ?? [];
  if (!Array.isArray(list)) die(`${path}: 'expected_failures' must be a list`);

  const errors = [];
  const entries = [];
  const seen = new Set();
  list.forEach((e, i) => {
    const where = `${path}: expected_failures[${i}]`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) {
      errors.push(`${where}: must be a mapping {scenario, spec, reason[, check]}`);
      return;
    }
    const bad = Object.keys(e).filter((k) => !['scenario', 'spec', 'check', 'reason'].includes(k));
    if (bad.length) errors.push(`${where}: unknown key(s): ${bad.join(', ')}`);
    const spec = e.spec === undefined ? undefined : String(e.spec);
    if (typeof e.scenario !== 'string' || !e.scenario) errors.push(`${where}: 'scenario' is required`);
    if (!SPECS.includes(spec)) errors.push(`${where}: 'spec' must be one of ${SPECS.join(', ')}`);
    if (typeof e.reason !== 'string' || e.reason.trim().length === 0) {
      errors.push(`${where}: 'reason' is required (say why it fails and where the fix is tracked)`);
    }
    if (e.check !== undefined && (typeof e.check !== 'string' || !e.check)) {
      errors.push(`${where}: 'check' must be a non-empty check id when present`);
    }
    const key = `${spec}/${e.scenario}`;
    if (known && typeof e.scenario === 'string' && SPECS.includes(spec) && !known.has(key)) {
      errors.push(`${where}: ${key} is not a scenario scripts/conformance.sh runs`);
    }
    const id = `${key}:${e.check ?? '*'}`;
    if (seen.has(id)) errors.push(`${where}: duplicate entry ${id}`);
    seen.add(id);
    entries.push({ spec, scenario: e.scenario, check: e.check, reason: e.reason, index: i });
  });
  for (const e of entries) {
    if (e.check && seen.has(`${e.spec}/${e.scenario}:*`)) {
      errors.push(
        `${path}: expected_failures[${e.index}]: ${e.spec}/${e.scenario} is baselined as a whole, ` +
          `so the per-check entry '${e.check}' is redundant; remove one of them`,
      );
    }
  }
  if (errors.length) die(`invalid baseline:\n  ${errors.join('\n  ')}`);
  return entries;
}

function readChecks(dir) {
  // The runner writes <output-dir>/<scenario>-<timestamp>/checks.json; the scenario name may
  // contain '/', so search the tree.
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop();
    if (!existsSync(d)) continue;
    for (const ent of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, ent.name);
      if (ent.isDirectory()) stack.push(p);
      else if (ent.name === 'checks.json') return { checks: JSON.parse(readFileSync(p, 'utf8')), resultDir: d };
    }
  }
  return null;
}

const SEVERITY = { FAILURE: 3, WARNING: 2, SUCCESS: 1, INFO: 0, SKIPPED: 0 };
const isFailing = (s) => s === 'FAILURE' || s === 'WARNING';

function evaluateRun(run, entries) {
  const found = readChecks(run.dir);
  const runnerLog = existsSync(run.log) ? readFileSync(run.log, 'utf8') : '';
  // verdict per check id: most severe occurrence wins (ids repeat within a scenario)
  const verdict = new Map();
  let passedChecks = 0;
  let failedChecks = 0;
  const failDetail = new Map();
  if (found) {
    for (const c of found.checks) {
      if (c.status === 'SUCCESS') passedChecks++;
      if (isFailing(c.status)) {
        failedChecks++;
        if (!failDetail.has(c.id)) failDetail.set(c.id, c.errorMessage || c.description || c.status);
      }
      const prev = verdict.get(c.id);
      if (!prev || SEVERITY[c.status] > SEVERITY[prev]) verdict.set(c.id, c.status);
    }
  }
  const failing = new Set([...verdict].filter(([, s]) => isFailing(s)).map(([id]) => id));
  if (!found) {
    failing.add(PSEUDO.runnerError);
    const skipped = /SKIPPED: scenario/.test(runnerLog);
    failDetail.set(PSEUDO.runnerError, skipped ? 'runner skipped the scenario (not applicable at this spec version)' : `runner exited ${run.rc} without writing checks.json (see ${run.log})`);
  } else {
    if (passedChecks + failedChecks === 0) {
      failing.add(PSEUDO.noScoredChecks);
      failDetail.set(PSEUDO.noScoredChecks, 'no check passed or failed: the client exercised nothing');
    }
    // The runner exits 1 when checks fail/warn, the client timed out, or the client exited
    // non-zero (unless the scenario allows that). Anything not explained by the checks is
    // attributed to the client process.
    const timedOut = /CLIENT TIMED OUT/.test(runnerLog);
    const exitedBadly = /CLIENT EXITED WITH ERROR/.test(runnerLog);
    if (timedOut || exitedBadly || (run.rc !== 0 && failedChecks === 0)) {
      failing.add(PSEUDO.clientExit);
      const m = runnerLog.match(/Client exited with code (-?\d+)/);
      failDetail.set(PSEUDO.clientExit, timedOut ? 'client timed out' : m ? `client exited with code ${m[1]}` : `runner exited ${run.rc}`);
    }
  }

  const mine = entries.filter((e) => e.spec === run.spec && e.scenario === run.scenario);
  const whole = mine.find((e) => !e.check);
  const unexpected = [];
  const expected = [];
  const stale = [];
  if (whole) {
    if (failing.size > 0) expected.push(...failing);
    else stale.push('(whole scenario)');
  } else {
    const listed = new Set(mine.map((e) => e.check));
    for (const id of failing) (listed.has(id) ? expected : unexpected).push(id);
    for (const e of mine) if (!failing.has(e.check)) stale.push(e.check);
  }
  let result;
  if (unexpected.length) result = 'FAIL';
  else if (stale.length) result = 'STALE';
  else if (expected.length) result = 'XFAIL';
  else result = 'PASS';
  return {
    spec: run.spec,
    scenario: run.scenario,
    result,
    runnerExit: run.rc,
    passedChecks,
    failedChecks,
    unexpected: unexpected.map((id) => ({ id, detail: failDetail.get(id) })),
    expected: expected.map((id) => ({ id, detail: failDetail.get(id) })),
    stale,
    resultDir: found?.resultDir ?? null,
    log: run.log,
  };
}

function oneLine(s, n = 110) {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

function evaluate(baselinePath, manifestPath, summaryPath) {
  const entries = loadBaseline(baselinePath, null);
  const runs = readFileSync(manifestPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const results = runs.map((r) => evaluateRun(r, entries));

  const rows = results.map((r) => [r.spec, r.scenario, r.result, `${r.passedChecks}/${r.passedChecks + r.failedChecks}`, String(r.runnerExit)]);
  const head = ['SPEC', 'SCENARIO', 'RESULT', 'CHECKS OK', 'RUNNER EXIT'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r) => r.map((c, i) => c.padEnd(w[i])).join('  ').trimEnd();
  console.log('');
  console.log(fmt(head));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) console.log(fmt(r));

  const details = results.filter((r) => r.result !== 'PASS');
  if (details.length) {
    console.log('');
    for (const r of details) {
      console.log(`${r.result} ${r.spec} ${r.scenario}  (${r.resultDir ?? r.log})`);
      for (const u of r.unexpected) console.log(`  unexpected failure  ${u.id}: ${oneLine(u.detail)}`);
      for (const s of r.stale) console.log(`  stale baseline entry  ${s}: now passes, remove it from tests/conformance/baseline.yml`);
      for (const x of r.expected) console.log(`  expected failure  ${x.id}: ${oneLine(x.detail)}`);
    }
  }

  const count = (k) => results.filter((r) => r.result === k).length;
  const passed = count('PASS');
  const failed = count('FAIL') + count('STALE');
  const xfail = count('XFAIL');
  const staleEntries = results.reduce((n, r) => n + r.stale.length, 0);
  writeFileSync(summaryPath, JSON.stringify({ passed, failed, expectedFailures: xfail, staleEntries, results }, null, 2) + '\n');
  console.log('');
  console.log(`${xfail} expected failure(s) (baselined, counted as neither), ${staleEntries} stale baseline entr${staleEntries === 1 ? 'y' : 'ies'}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'validate' && args.length >= 1) {
  loadBaseline(args[0], new Set(args.slice(1)));
} else if (cmd === 'evaluate' && args.length === 3) {
  evaluate(...args);
} else {
  die('usage: conformance-eval.mjs validate <baseline> <spec/scenario>... | evaluate <baseline> <manifest.jsonl> <summary.json>');
}
