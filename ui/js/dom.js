// Building DOM from data. There is deliberately no HTML path: every string becomes a text node,
// so text a server wrote can never turn into markup, a handler or a link.

// Attributes that could run code, load something or style inline (the CSP refuses inline styles).
const BLOCKED = new Set(['style', 'href', 'src', 'srcdoc', 'srcset', 'action', 'formaction', 'xlink:href']);

function checkAttribute(name) {
  const lower = name.toLowerCase();
  if (lower.startsWith('on') || BLOCKED.has(lower)) {
    throw new Error(`el(): the attribute ${JSON.stringify(name)} is not allowed`);
  }
}

/** Appends children: strings and numbers as text nodes, nodes as they are; null/false skipped. */
export function append(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/**
 * `el('p', {class: 'note', 'data-testid': 'x'}, 'text', otherNode)`. Attribute values go through
 * setAttribute; `true` sets an empty attribute, `false`/null/undefined leave it out.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    checkAttribute(name);
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  return append(node, ...children);
}

// The only image sources the window shows: types whose bytes the host checked (it sniffed them),
// as data: URLs (the CSP allows `img-src 'self' data:` and nothing else).
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * An `<img>` for a host-checked image display (`{kind: 'image', mime, base64}`), or null for
 * anything else: another kind, a type outside PNG/JPEG/GIF/WebP, or data that is not plain
 * base64. The one place a `src` is ever set, and only to a `data:` URL built here.
 */
export function checkedImage(display, attrs = {}) {
  if (!display || display.kind !== 'image') return null;
  const { mime, base64 } = display;
  if (typeof mime !== 'string' || !IMAGE_TYPES.has(mime)) return null;
  if (typeof base64 !== 'string' || base64.length % 4 !== 0 || !BASE64.test(base64)) return null;
  const image = el('img', attrs);
  image.src = `data:${mime};base64,${base64}`;
  return image;
}

/** Replaces every child of `parent`. */
export function replace(parent, ...children) {
  parent.replaceChildren();
  return append(parent, ...children);
}

/** Sets or removes a boolean attribute. */
export function flag(node, name, on) {
  checkAttribute(name);
  node.toggleAttribute(name, Boolean(on));
}

/** Elements in `root` a keyboard user can reach, in tab order of the document. */
export function focusables(root) {
  const selector = 'button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';
  return [...root.querySelectorAll(selector)].filter(
    (node) => !node.disabled && !node.closest('[hidden]') && node.getClientRects().length > 0,
  );
}
