#!/usr/bin/env node
// Seeds the real registry packages that the package-binding tests install, pinned by hash:
// every entry of tests/packages/npm/*/package-lock.json and every wheel hash of
// tests/packages/pypi/*/requirements.txt. Usage: node scripts/fetch-packages.mjs [SEED_DIR]
// (default: target/package-seed under the repository). The seed is laid out like the
// registries themselves, so Gatehouse can read it as a pre-seeded directory:
//   npm/<name>/-/<basename>-<version>.tgz   (<name> may be @scope/name; the npm tarball path)
//   pypi/<wheel file name>
// Only https://registry.npmjs.org/, https://pypi.org/ and https://files.pythonhosted.org/ are
// contacted. Every artifact is hashed before it takes its final name (written to a temporary
// file in the same directory, then renamed), so an interrupted or failed run leaves no
// half-written file. Files already present with the right hash are not fetched again, and when
// everything is present no request is made at all. Node >= 20, no dependencies.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const NPM_REGISTRY = 'https://registry.npmjs.org/';
const PYPI_INDEX = 'https://pypi.org/simple/';
const PYPI_FILES_HOST = 'files.pythonhosted.org';
const CONCURRENCY = 8;
const ATTEMPTS = 3; // one try and two retries
const TIMEOUT_MS = 180_000;

class InputError extends Error {}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function usage() {
  return 'usage: node scripts/fetch-packages.mjs [SEED_DIR]   (default: target/package-seed)';
}

// --- inputs ---------------------------------------------------------------------------------

// npm package names: an optional scope and a name, neither starting with "." or "_" (so no
// "." or ".." path segment can come from a lockfile).
const NPM_NAME = /^(?:@[A-Za-z0-9~-][A-Za-z0-9._~-]*\/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*$/;
const NPM_VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]*$/;

async function listDirs(dir) {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name)).sort();
  } catch (e) {
    if (e.code === 'ENOENT') return [];
    throw e;
  }
}

function sha512Digests(integrity, where) {
  if (typeof integrity !== 'string') throw new InputError(`${where}: no "integrity"; regenerate the lockfile with npm install --package-lock-only`);
  const digests = [];
  for (const spec of integrity.trim().split(/\s+/)) {
    const m = /^sha512-([A-Za-z0-9+/]{86}==)(?:\?.*)?$/.exec(spec);
    if (m) digests.push(Buffer.from(m[1], 'base64').toString('hex'));
  }
  if (digests.length === 0) throw new InputError(`${where}: integrity "${integrity}" has no sha512 digest; only sha512 is accepted`);
  return digests;
}

// One artifact per lockfile entry, at the registry's own tarball path.
async function npmArtifacts(lockPath) {
  const rel = path.relative(repoRoot, lockPath);
  let lock;
  try {
    lock = JSON.parse(await readFile(lockPath, 'utf8'));
  } catch (e) {
    throw new InputError(`${rel}: not readable JSON (${e.message})`);
  }
  if (lock.lockfileVersion !== 3 || typeof lock.packages !== 'object' || lock.packages === null) {
    throw new InputError(`${rel}: lockfileVersion must be 3 with a "packages" map; regenerate it with npm >= 9`);
  }
  const out = [];
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key === '') continue; // the project itself
    const where = `${rel}: "${key}"`;
    if (!key.startsWith('node_modules/')) throw new InputError(`${where}: not under node_modules (a workspace or link); the test closures must come from the registry only`);
    if (entry.link) throw new InputError(`${where}: a link, not a registry package`);
    if (entry.inBundle) continue; // shipped inside its parent's tarball
    const name = typeof entry.name === 'string' ? entry.name : key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const version = entry.version;
    if (!NPM_NAME.test(name)) throw new InputError(`${where}: package name "${name}" is not a valid npm name`);
    if (typeof version !== 'string' || !NPM_VERSION.test(version)) throw new InputError(`${where}: version "${version}" is not a valid npm version`);
    const basename = name.includes('/') ? name.slice(name.indexOf('/') + 1) : name;
    const tarPath = `${name}/-/${basename}-${version}.tgz`;
    const expected = NPM_REGISTRY + tarPath;
    if (entry.resolved !== expected) {
      throw new InputError(`${where}: "resolved" is ${JSON.stringify(entry.resolved)}, expected ${expected}; only the npm registry's own tarball URL is accepted (regenerate with --omit-lockfile-registry-resolved=false)`);
    }
    out.push({
      kind: 'npm',
      label: `${name}@${version}`,
      url: expected,
      dest: ['npm', ...tarPath.split('/')],
      algo: 'sha512',
      digests: sha512Digests(entry.integrity, where),
    });
  }
  return out;
}

const PEP503 = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');
const PY_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const PY_VERSION = /^[A-Za-z0-9][A-Za-z0-9.+!_-]*$/;

// `name==version --hash=sha256:HEX ...` lines (pip's hash-checking format; backslash
// continuations, comments, an optional `; marker` which does not narrow what is seeded).
async function pypiRequirements(reqPath) {
  const rel = path.relative(repoRoot, reqPath);
  const text = await readFile(reqPath, 'utf8');
  const logical = [];
  let acc = '';
  let start = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    let line = raw.replace(/(^|\s)#.*$/, '');
    if (acc === '') start = i + 1;
    if (line.endsWith('\\')) {
      acc += line.slice(0, -1) + ' ';
      return;
    }
    acc += line;
    if (acc.trim() !== '') logical.push({ line: start, text: acc.trim() });
    acc = '';
  });
  if (acc.trim() !== '') logical.push({ line: start, text: acc.trim() });

  const out = [];
  for (const { line, text: req } of logical) {
    const where = `${rel}:${line}`;
    const firstHash = req.indexOf('--hash=');
    if (firstHash < 0) throw new InputError(`${where}: "${req}" has no --hash=sha256:…; every requirement must be pinned by hash`);
    const spec = req.slice(0, firstHash).split(';')[0].trim();
    const m = /^([A-Za-z0-9._-]+)(?:\[[A-Za-z0-9._,\s-]*\])?\s*==\s*([^\s;]+)$/.exec(spec);
    if (!m || !PY_NAME.test(m[1]) || !PY_VERSION.test(m[2])) {
      throw new InputError(`${where}: "${spec}" is not "name==version"; pin every requirement to one exact version`);
    }
    const hashes = [];
    for (const tok of req.slice(firstHash).split(/\s+/)) {
      const h = /^--hash=sha256:([0-9a-f]{64})$/.exec(tok);
      if (!h) throw new InputError(`${where}: "${tok}" is not --hash=sha256:<64 lowercase hex digits>`);
      hashes.push(h[1]);
    }
    for (const sha256 of hashes) {
      out.push({ kind: 'pypi', name: PEP503(m[1]), version: m[2], sha256, where });
    }
  }
  return out;
}

// --- files and hashes -----------------------------------------------------------------------

async function hashFile(file, algo) {
  const h = createHash(algo);
  for await (const chunk of createReadStream(file)) h.update(chunk);
  return h.digest('hex');
}

async function sizeOf(file) {
  return (await stat(file)).size;
}

// Present and with one of the expected digests? A missing file is simply absent.
async function presentWith(file, algo, digests) {
  try {
    return digests.includes(await hashFile(file, algo));
  } catch (e) {
    if (e.code === 'ENOENT') return false;
    throw e;
  }
}

// --- network --------------------------------------------------------------------------------

function allowedUrl(u) {
  let url;
  try {
    url = new URL(u);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username || url.password || url.port) return null;
  if (!['registry.npmjs.org', 'pypi.org', PYPI_FILES_HOST].includes(url.hostname)) return null;
  return url;
}

class PermanentError extends Error {}

// GET with redirects followed by hand, so that each hop must itself be a registry URL.
async function get(url, headers = {}) {
  let current = url;
  for (let hop = 0; hop < 5; hop++) {
    if (!allowedUrl(current)) throw new PermanentError(`refusing ${current}: not a package registry URL`);
    const res = await fetch(current, { headers, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
    if ([301, 302, 303, 307, 308].includes(res.status)) {
      const loc = res.headers.get('location');
      await res.body?.cancel();
      if (!loc) throw new PermanentError(`${current}: redirect without a location`);
      current = new URL(loc, current).href;
      continue;
    }
    if (res.ok) return res;
    await res.body?.cancel();
    const msg = `${current}: HTTP ${res.status}`;
    if (res.status === 404 || res.status === 403 || res.status === 410) throw new PermanentError(msg);
    throw new Error(msg);
  }
  throw new PermanentError(`${url}: too many redirects`);
}

async function withRetries(what, fn) {
  let last;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      return await fn();
    } catch (e) {
      last = e;
      if (e instanceof PermanentError || e instanceof InputError) break;
      if (attempt < ATTEMPTS) console.error(`fetch-packages: ${what}: ${e.message}; retrying`);
    }
  }
  throw last;
}

// Downloads into a temporary file beside `dest`, checks the digest, then renames into place.
async function download(url, dest, algo, digests) {
  await mkdir(path.dirname(dest), { recursive: true });
  return withRetries(url, async () => {
    const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.${process.pid}.${randomBytes(6).toString('hex')}.part`);
    let fh;
    try {
      const res = await get(url);
      fh = await open(tmp, 'wx');
      const h = createHash(algo);
      let bytes = 0;
      for await (const chunk of res.body) {
        h.update(chunk);
        bytes += chunk.length;
        await fh.write(chunk);
      }
      await fh.sync();
      await fh.close();
      fh = undefined;
      const got = h.digest('hex');
      if (!digests.includes(got)) {
        throw new PermanentError(`${url}: ${algo} is ${got}, the pin says ${digests.join(' or ')}; the artifact does not match its pin (not retried)`);
      }
      await rename(tmp, dest);
      return bytes;
    } finally {
      if (fh) await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
    }
  });
}

// PEP 691 JSON simple index of one project (what pip and uv read), fetched once per project.
const indexCache = new Map();
function pypiIndex(name) {
  if (!indexCache.has(name)) {
    const url = `${PYPI_INDEX}${name}/`;
    indexCache.set(
      name,
      withRetries(url, async () => {
        const res = await get(url, { Accept: 'application/vnd.pypi.simple.v1+json' });
        const type = res.headers.get('content-type') ?? '';
        if (!type.startsWith('application/vnd.pypi.simple.v1+json')) {
          await res.body?.cancel();
          throw new PermanentError(`${url}: answered ${type || 'no content type'}, not the PEP 691 JSON index`);
        }
        const doc = await res.json();
        if (!Array.isArray(doc.files)) throw new PermanentError(`${url}: no "files" list in the index`);
        return { url, files: doc.files };
      }),
    );
  }
  return indexCache.get(name);
}

// `{dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl`
function parseWheelName(filename) {
  if (!/^[A-Za-z0-9_.+!-]+\.whl$/.test(filename) || filename.startsWith('.')) return null;
  const parts = filename.slice(0, -4).split('-');
  if (parts.length !== 5 && parts.length !== 6) return null;
  return { name: PEP503(parts[0]), version: parts[1] };
}

async function locateWheel(req) {
  const { url: indexUrl, files } = await pypiIndex(req.name);
  const file = files.find((f) => f?.hashes?.sha256 === req.sha256);
  if (!file) throw new InputError(`${req.where}: ${req.name}==${req.version}: PyPI lists no file with sha256 ${req.sha256}`);
  const parsed = typeof file.filename === 'string' ? parseWheelName(file.filename) : null;
  if (!parsed) throw new InputError(`${req.where}: sha256 ${req.sha256} is ${JSON.stringify(file.filename)}, not a wheel; only wheels are seeded`);
  if (parsed.name !== req.name || parsed.version !== req.version) {
    throw new InputError(`${req.where}: sha256 ${req.sha256} is ${file.filename}, not a wheel of ${req.name}==${req.version}`);
  }
  const url = allowedUrl(new URL(file.url, indexUrl).href);
  if (!url || url.hostname !== PYPI_FILES_HOST) {
    throw new InputError(`${req.where}: ${file.filename} is served from ${file.url}, not https://${PYPI_FILES_HOST}/; refusing it`);
  }
  return { filename: file.filename, url: url.href };
}

// --- main -----------------------------------------------------------------------------------

async function pool(items, worker) {
  const errors = [];
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await worker(item);
      } catch (e) {
        errors.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, run));
  return errors;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('-h') || args.includes('--help')) {
    console.log(usage());
    return 0;
  }
  if (args.length > 1 || args.some((a) => a.startsWith('-'))) throw new InputError(usage());
  if (Number(process.versions.node.split('.')[0]) < 20) throw new InputError(`Node ${process.versions.node} is too old; use Node 20 or newer`);
  const seed = args[0] ? path.resolve(args[0]) : path.join(repoRoot, 'target', 'package-seed');

  // Read and check every input before touching the network or the seed.
  const npm = [];
  for (const dir of await listDirs(path.join(repoRoot, 'tests', 'packages', 'npm'))) {
    npm.push(...(await npmArtifacts(path.join(dir, 'package-lock.json'))));
  }
  const wheels = [];
  for (const dir of await listDirs(path.join(repoRoot, 'tests', 'packages', 'pypi'))) {
    wheels.push(...(await pypiRequirements(path.join(dir, 'requirements.txt'))));
  }

  // The same tarball may be in several lockfiles; its pins must agree.
  const npmByDest = new Map();
  for (const a of npm) {
    const key = a.dest.join('/');
    const seen = npmByDest.get(key);
    if (seen && seen.digests.join() !== a.digests.join()) {
      throw new InputError(`${a.label}: the lockfiles pin different integrity values for ${a.url}`);
    }
    npmByDest.set(key, a);
  }
  const wheelBySha = new Map();
  for (const w of wheels) {
    const seen = wheelBySha.get(w.sha256);
    if (seen && (seen.name !== w.name || seen.version !== w.version)) {
      throw new InputError(`${w.where}: sha256 ${w.sha256} is also pinned for ${seen.name}==${seen.version} (${seen.where})`);
    }
    wheelBySha.set(w.sha256, w);
  }

  let fetched = 0;
  let present = 0;
  let fetchedBytes = 0;
  let presentBytes = 0;
  const errors = [];

  errors.push(
    ...(await pool([...npmByDest.values()], async (a) => {
      const dest = path.join(seed, ...a.dest);
      if (await presentWith(dest, a.algo, a.digests)) {
        const bytes = await sizeOf(dest);
        present++;
        presentBytes += bytes;
        return;
      }
      const bytes = await download(a.url, dest, a.algo, a.digests);
      fetched++;
      fetchedBytes += bytes;
    })),
  );

  // Wheels are named by the index, so match the files already present by their hash first and
  // ask the index only about the rest.
  const pypiDir = path.join(seed, 'pypi');
  const presentBySha = new Map();
  let names = [];
  try {
    names = (await readdir(pypiDir)).filter((n) => n.endsWith('.whl') && !n.startsWith('.'));
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  for (const n of names) presentBySha.set(await hashFile(path.join(pypiDir, n), 'sha256'), n);
  errors.push(
    ...(await pool([...wheelBySha.values()], async (w) => {
      const have = presentBySha.get(w.sha256);
      const parsed = have ? parseWheelName(have) : null;
      if (parsed && parsed.name === w.name && parsed.version === w.version) {
        const bytes = await sizeOf(path.join(pypiDir, have));
        present++;
        presentBytes += bytes;
        return;
      }
      const { filename, url } = await locateWheel(w);
      const bytes = await download(url, path.join(pypiDir, filename), 'sha256', [w.sha256]);
      fetched++;
      fetchedBytes += bytes;
    })),
  );

  const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
  console.log(
    `fetch-packages: ${fetched} fetched (${mib(fetchedBytes)}), ${present} already present (${mib(presentBytes)}); ` +
      `${npmByDest.size} npm tarballs, ${wheelBySha.size} wheels in ${path.relative(process.cwd(), seed) || '.'}`,
  );
  if (errors.length > 0) {
    for (const e of errors) console.error(`fetch-packages: error: ${e.message}`);
    console.error(`fetch-packages: ${errors.length} artifact(s) could not be seeded; nothing unverified was written`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`fetch-packages: error: ${e instanceof InputError ? e.message : e.stack}`);
    process.exit(1);
  },
);
