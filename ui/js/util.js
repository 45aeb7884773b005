// Small pure helpers shared by the views.

/**
 * Wraps an async refresh so that calls never overlap: a call made while one runs schedules exactly
 * one more run afterwards, so the last state fetched is never older than the last request.
 */
export function coalesce(run) {
  let running = null;
  let again = false;
  const loop = async () => {
    do {
      again = false;
      await run();
    } while (again);
  };
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = loop().finally(() => {
      running = null;
    });
    return running;
  };
}

/** A local, readable time from epoch milliseconds or an RFC 3339 string; the input if neither. */
export function formatTime(value) {
  if (value === null || value === undefined || value === '') return '';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

/** A value as JSON text for display (strings stay as they are). */
export function asText(value, indent = 2) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, indent) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Splits a command-line style argument string: whitespace separates, quotes group. */
export function splitArgs(text) {
  const args = [];
  let current = null;
  let quote = null;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      current ??= '';
    } else if (/\s/.test(ch)) {
      if (current !== null) args.push(current);
      current = null;
    } else {
      current = (current ?? '') + ch;
    }
  }
  if (current !== null) args.push(current);
  return args;
}

/** Where the host starts in `full`: after the scheme and any userinfo, else its first occurrence. */
export function hostIndex(full, host) {
  if (!host) return -1;
  const scheme = full.indexOf('://');
  if (scheme >= 0) {
    const start = scheme + 3;
    const rest = full.slice(start);
    const end = rest.search(/[/?#]/);
    const authority = end < 0 ? rest : rest.slice(0, end);
    const at = authority.lastIndexOf('@');
    const hostStart = start + at + 1;
    if (full.startsWith(host, hostStart)) return hostStart;
  }
  return full.indexOf(host);
}
