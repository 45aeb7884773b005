// The only module that talks to Rust: one function per command of docs/desktop-api.md, and
// onEvent for the "something changed, refetch" events. Everything else imports from here.

export const EVENTS = Object.freeze({
  prompts: 'gatehouse://prompts',
  servers: 'gatehouse://servers',
  audit: 'gatehouse://audit',
  traffic: 'gatehouse://traffic',
  clients: 'gatehouse://clients',
  signIns: 'gatehouse://sign-ins',
  resources: 'gatehouse://resources',
  host: 'gatehouse://host',
});

/** A failed command, always `{code, message}` whatever shape Rust rejected with. */
export class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
  }
}

function toApiError(raw) {
  if (raw instanceof ApiError) return raw;
  if (typeof raw === 'string') return new ApiError('error', raw);
  if (raw && typeof raw === 'object') {
    const code = typeof raw.code === 'string' && raw.code !== '' ? raw.code : 'error';
    const message = typeof raw.message === 'string' ? raw.message : JSON.stringify(raw);
    return new ApiError(code, message);
  }
  return new ApiError('error', String(raw));
}

function tauri() {
  const api = window.__TAURI__;
  if (!api?.core?.invoke || !api?.event?.listen) {
    throw new ApiError('ipc_unavailable', 'This page only works inside the Gatehouse app.');
  }
  return api;
}

/** Called with every `host_gone` error (the window's connection to the host ended). */
let onHostGone = null;
export function whenHostGone(cb) { onHostGone = cb; }

async function invoke(command, args) {
  try {
    return await tauri().core.invoke(command, args);
  } catch (error) {
    const failed = toApiError(error);
    if (failed.code === 'host_gone' && onHostGone) onHostGone(failed);
    throw failed;
  }
}

/** Drops empty optional arguments so Rust sees them as absent. */
function present(args) {
  return Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined && v !== null && v !== ''));
}

// Servers
export const serversList = () => invoke('servers_list');
export const serverConnect = (name) => invoke('server_connect', { name });
export const serverDetail = (name) => invoke('server_detail', { name });
export const serverAdd = (entry) => invoke('server_add', { entry });
export const serversImport = (text, confirmed = []) => invoke('servers_import', { text, confirmed });
export const serverResume = (name) => invoke('server_resume', { name });
/**
 * Your confinement settings for a server (`{read, write, hosts, anyHost, processes, unconfined}`,
 * one path or host:port per entry); resolves to its ConfinementView.
 */
export const serverConfine = (name, confinement) => invoke('server_confine', { name, confinement });
export const toolCall = (server, tool, args) => invoke('tool_call', { server, tool, arguments: args });
/**
 * Approves tools by exact name (warn posture only). `acknowledgement` is 'high_findings' only
 * from a card's explicit "Approve despite findings"; otherwise a tool with a high review
 * finding is refused (`finding_not_acknowledged`).
 */
export const toolsApprove = (server, names, acknowledgement = 'not_given') =>
  invoke('tools_approve', { server, names, acknowledgement });

// A server's resources and prompts
export const serverResources = (server) => invoke('server_resources', { server });
export const serverPrompts = (server) => invoke('server_prompts', { server });
export const resourceRead = (server, uri) => invoke('resource_read', { server, uri });
export const templateRead = (server, template, values) => invoke('resource_read', { server, template, values });
export const promptGet = (server, name, args) => invoke('prompt_get', { server, name, arguments: args });
/** `target` is `{prompt: NAME}` or `{template: URI_TEMPLATE}`; resolves to the values. */
export const argumentComplete = (server, target, argument, value, context = {}) =>
  invoke('argument_complete', { server, target, argument, value, context });
export const resourceSubscribe = (server, uri) => invoke('resource_subscribe', { server, uri });
export const resourceUnsubscribe = (server, uri) => invoke('resource_unsubscribe', { server, uri });
export const promptsApprove = (server, names, acknowledgement = 'not_given') =>
  invoke('prompts_approve', { server, names, acknowledgement });
export const resourcesApprove = (server, uris) => invoke('resources_approve', { server, uris });
/** Saves item `index` of read `readId` into the download directory; resolves to the path. */
export const resourceSave = (readId, index) => invoke('resource_save', { readId, index });

// AI clients (through gatehouse serve)
export const clientsList = () => invoke('clients_list');

// Pins of your own, and the AI clients' config files
export const pinPlan = (name) => invoke('pin_plan', { name });
export const pin = (name) => invoke('pin', { name });
export const clientConfigs = () => invoke('client_configs');
export const clientConnect = (client) => invoke('client_connect', { client });
export const clientRestore = (client, force = false) => invoke('client_restore', { client, force });

// Prompts
export const promptsList = () => invoke('prompts_list');
export const promptValidate = (promptId, content) => invoke('prompt_validate', { promptId, content });
export const promptAnswer = (promptId, answer) => invoke('prompt_answer', { promptId, answer });
export const promptWaitChoice = (promptId, choice) => invoke('prompt_wait_choice', { promptId, choice });
export const promptDismiss = (promptId) => invoke('prompt_dismiss', { promptId });

// Sign-ins (MCP authorization)
export const signInCards = () => invoke('sign_in_cards');
export const signInAnswer = (signInId, reply) => invoke('sign_in_answer', { signInId, reply });
export const serverSignIns = () => invoke('server_sign_ins');
export const serverSignIn = (name) => invoke('server_sign_in', { name });
export const serverSignOut = (name) => invoke('server_sign_out', { name });

// Audit, traffic, settings
export const auditList = ({ server, event } = {}) => invoke('audit_list', present({ server, event }));
export const auditVerify = () => invoke('audit_verify');
export const trafficList = (server) => invoke('traffic_list', present({ server }));
export const settingsGet = () => invoke('settings_get');
// Start at login (AutostartView: {status: 'off'|'on'|'foreign'|'unavailable', exec, expected, entry, foreign, firstRunPending, problem})
export const autostartGet = () => invoke('autostart_get');
export const autostartSet = (on, from) => invoke('autostart_set', { on, from }); // from: 'settings' | 'first_run'


// Quitting the background host (closing the window does not)
export const quitPreview = () => invoke('quit_preview');
export const quit = () => invoke('quit');

/** Tells Rust the first frame is painted (start-up is measured up to here). */
export const uiReady = () => invoke('ui_ready');

/** Subscribes to a Rust event; `cb` gets the payload. Resolves to the unlisten function. */
export async function onEvent(name, cb) {
  try {
    return await tauri().event.listen(name, (event) => cb(event.payload));
  } catch (error) {
    throw toApiError(error);
  }
}
