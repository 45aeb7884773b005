// Who a server is, as admission established it: status badges and the identity banner. The
// banner is drawn here from the host's admission record; the server's own claims are set apart
// and labelled as claimed.
import { el } from './dom.js';

const STATUS = {
  admitted: { label: 'Admitted', tone: 'good', icon: '✓' },
  unattested: { label: 'Unattested', tone: 'warn', icon: '!' },
  refused: { label: 'Refused', tone: 'bad', icon: '✕' },
  suspended: { label: 'Suspended', tone: 'bad', icon: '‖' },
  connecting: { label: 'Connecting…', tone: 'busy', icon: '…' },
  not_connected: { label: 'Not connected', tone: 'idle', icon: '○' },
  error: { label: 'Error', tone: 'bad', icon: '✕' },
};

/** A status badge with colour, icon and words; `attrs` adds test hooks where wanted. */
export function statusBadge(status, attrs = {}) {
  const known = STATUS[status] ?? { label: String(status), tone: 'idle', icon: '?' };
  return el('span', { class: `badge tone-${known.tone}`, ...attrs },
    el('span', { class: 'badge-icon', 'aria-hidden': 'true' }, known.icon), known.label);
}

export function demoTag() {
  return el('span', { class: 'tag tag-demo', 'data-testid': 'demo', title: 'Admitted through the DEMO-ONLY trust root: its keys are public' }, 'DEMO');
}

const VERIFIED_FIELDS = [
  ['verified_id', 'Verified id'],
  ['clearance', 'Clearance'],
  ['signer', 'Signed by key'],
  ['bundle', 'Trust root'],
  // Whose word the identity is: the server's attestation, a binding, or the admins' vouch
  // ("vouched for by BUNDLE; the server publishes no attestation"), drawn by the host.
  ['established', 'Established'],
  ['origin', 'Origin'],
  ['command', 'Command'],
];

const CLAIMED_FIELDS = [
  ['publisher', 'Publisher'],
  ['server_name', 'Server name'],
  ['server_version', 'Version'],
];

function fieldRow(name, label, value, claimed) {
  // An absent value stays an empty element (the stylesheet shows a dash) so hooks read "".
  return el('div', { class: 'field-row' },
    el('dt', {}, label),
    el('dd', { 'data-field': name, 'data-claimed': claimed, class: name === 'command' || name === 'signer' ? 'mono' : null }, value ?? ''));
}

/** Row statuses after which admission ran and did not admit. */
const NOT_ADMITTED = new Set(['refused', 'unattested', 'suspended']);

/**
 * The identity banner (`gatehouse_host::consent::IdentityBanner`). `testid` is `banner` on prompt
 * cards and `identity` in the server detail.
 */
export function renderBanner(banner, testid = 'banner', status = null) {
  if (!banner) {
    const why = NOT_ADMITTED.has(status)
      ? 'No verified identity: admission did not admit this server (the reason is above).'
      : status === 'error'
        ? 'No identity: Gatehouse could not reach this server (the reason is above).'
        : 'No identity: this server has not been through admission yet.';
    return el('div', { class: 'banner unverified', 'data-testid': testid },
      el('p', { class: 'banner-head' }, el('span', { class: 'banner-mark', 'aria-hidden': 'true' }, '!'), why));
  }
  const verified = Boolean(banner.verified_id);
  const head = verified
    ? el('p', { class: 'banner-head' },
      el('span', { class: 'banner-mark', 'aria-hidden': 'true' }, '✓'),
      el('span', {}, banner.attested_by === 'vouched'
        ? 'Vouched for by your admins: the server publishes no attestation'
        : 'Verified by Gatehouse'),
      banner.demo ? demoTag() : null)
    : el('p', { class: 'banner-head' },
      el('span', { class: 'banner-mark', 'aria-hidden': 'true' }, '!'),
      el('span', {}, 'Not verified: nobody vouches for who this is'),
      banner.demo ? demoTag() : null);
  const claimed = banner.claimed ?? {};
  return el('div', { class: `banner ${verified ? 'verified' : 'unverified'}`, 'data-testid': testid, 'data-status': banner.status },
    el('div', { class: 'banner-top' },
      head,
      statusBadge(banner.status)),
    el('p', { class: 'banner-server' }, 'Configured as ', el('strong', {}, banner.server ?? '')),
    el('dl', { class: 'fields' }, VERIFIED_FIELDS.map(([name, label]) => fieldRow(name, label, banner[name], false))),
    el('div', { class: 'claimed' },
      el('p', { class: 'claimed-head' },
        el('span', { class: 'tag tag-claimed' }, 'claimed (not verified)'),
        ' What the server says about itself'),
      el('dl', { class: 'fields' }, CLAIMED_FIELDS.map(([name, label]) => fieldRow(name, label, claimed[name], true)))),
    el('p', { class: 'banner-foot' }, 'Drawn by Gatehouse from the admission record. Servers cannot change this box.'));
}
