// Wiring: view routing, the Rust events, and the initial load. All state is fetched from Rust,
// so a reload of the window restores everything.
import { EVENTS, onEvent, uiReady } from './api.js';
import * as servers from './servers.js';
import * as prompts from './prompts.js';
import * as signIns from './signin.js';
import * as audit from './audit.js';
import * as traffic from './traffic.js';
import * as clients from './clients.js';
import * as clientFiles from './clientfiles.js';
import * as settings from './settings.js';
import * as host from './host.js';
import * as firstRun from './firstrun.js';
import { resourceUpdated } from './resources.js';
import { notify } from './notice.js';

const VIEWS = ['servers', 'prompts', 'clients', 'audit', 'traffic', 'settings'];
const REFRESH = {
  servers: servers.refresh,
  prompts: prompts.refresh,
  audit: audit.refresh,
  traffic: traffic.refresh,
  // The clients seen through `gatehouse serve`, and the clients' own config files.
  clients: () => Promise.all([clients.refresh(), clientFiles.refresh()]),
  settings: settings.refresh,
};
// Views whose data changed while they were not shown; refetched when shown.
const stale = new Set();
let current = null;

function showView(name) {
  if (!VIEWS.includes(name)) name = 'servers';
  current = name;
  for (const panel of document.querySelectorAll('main [data-view-panel]')) {
    panel.hidden = panel.dataset.viewPanel !== name;
  }
  for (const link of document.querySelectorAll('nav [data-view]')) {
    if (link.dataset.view === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
  if (stale.delete(name)) REFRESH[name]();
}

/** Refetches now if the view is shown, else when it is next shown. */
function refreshWhenShown(name) {
  if (current === name) REFRESH[name]();
  else stale.add(name);
}

async function refreshServers() {
  await servers.refresh();
  traffic.setServers(servers.names());
}

async function subscribe() {
  const subscriptions = [
    [EVENTS.prompts, () => prompts.refresh()],
    // A sign-in that ends may change what the Servers view shows of its server.
    [EVENTS.signIns, () => { signIns.refresh(); servers.refreshSignIns(); }],
    [EVENTS.servers, () => refreshServers()],
    // A server a client brought was admitted, refused or pinned: its line under the client.
    [EVENTS.servers, () => refreshWhenShown('clients')],
    [EVENTS.audit, () => refreshWhenShown('audit')],
    [EVENTS.traffic, () => refreshWhenShown('traffic')],
    // A client's calls are audit records.
    [EVENTS.clients, () => refreshWhenShown('clients')],
    [EVENTS.audit, () => refreshWhenShown('clients')],
    // A subscribed resource changed: the Resources tab marks it "updated".
    [EVENTS.resources, (payload) => resourceUpdated(payload ?? {})],
  ];
  const results = await Promise.allSettled(subscriptions.map(([name, cb]) => onEvent(name, cb)));
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) notify(failed.reason);
}

function start() {
  servers.init();
  prompts.init({ whenAsking: () => showView('prompts') });
  signIns.init();
  audit.init();
  traffic.init();
  clients.init();
  clientFiles.init();
  settings.init();
  host.init();

  for (const link of document.querySelectorAll('nav [data-view]')) {
    link.addEventListener('click', () => showView(link.dataset.view));
  }
  window.addEventListener('hashchange', () => showView(location.hash.slice(1)));
  showView(location.hash.slice(1));

  // After the first frame with the shell drawn: the start-up benchmark's finish line.
  requestAnimationFrame(() => requestAnimationFrame(() => uiReady().catch(() => {})));

  // Listen first, then fetch, so that no change between the two is missed.
  subscribe().finally(() => {
    refreshServers();
    prompts.refresh();
    signIns.refresh();
    audit.refresh();
    traffic.refresh();
    clients.refresh();
    clientFiles.refresh();
    settings.refresh();
    firstRun.maybeAsk(settings.showLogin);
  });
}

start();
