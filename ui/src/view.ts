// Pure builders: a report (or part of one) in, DOM out. No state, no listeners.

import { agoText, absoluteText, appendRich, buildErrorDetail, buildErrorNotice, buildLinkLine, el, expiryText, humanError, parseTime, untilText } from "./format";
import { icon } from "./icons";
import { buildClientEntry, type ClientEntry } from "./client-entry";
import { buildKeys, type KeysUi } from "./keys";
import type {
  BackendError,
  CatalogSource,
  CheckAttempt,
  CheckRecord,
  ClientTarget,
  ClientWrite,
  Connector,
  GatewayClient,
  GalleryEntry,
  ConnectorCheck,
  ConnectorStateId,
  Degraded,
  HealthRow,
  RefreshEntry,
  StatusReport,
  SwitchCandidate,
  ToolInfo,
  UnclaimedCredential,
} from "./types";

/** The runtimes' names as the window shows them. */
export const RUNTIME_NAMES: Record<string, string> = { claude_code: "Claude Code", codex: "Codex" };

export function runtimeName(id: string): string {
  return RUNTIME_NAMES[id] ?? id;
}

/**
 * The runtimes a connector can be added to from its row. The rule (found on this machine, not
 * bridged there yet, remote and OAuth-capable, a transport the runtime speaks) lives in the core,
 * which sends the answer as `can_add_to`; the window only draws it.
 */
export function addableRuntimes(c: Connector): string[] {
  return c.can_add_to ?? [];
}

export const STATE_LABELS: Record<ConnectorStateId, string> = {
  ready: "Ready",
  needs_authorization: "Needs authorization",
  token_expired: "Token expired",
  needs_reauth: "Needs re-auth",
  missing_configuration: "Missing configuration",
  unavailable: "Unavailable",
  secret_store_unreachable: "Secret store unreachable",
  no_credential_required: "No credential required",
  probe_failed: "Probe failed",
};

export interface RowNotice {
  tone: "error" | "info";
  text: string;
  kind?: string;
  /** A second line: what the backend said beside (the browser did not open, ...). */
  detail?: string | null;
  /** An address to show as selectable text with a Copy button. */
  link?: string | null;
  /** The row's state when the notice was raised; a state change clears it. */
  forState: ConnectorStateId;
  /** An Add refused for a same-name entry that is not Patchbay's: offer "Replace" for it. */
  replace?: { client: string; clientName: string; via: string } | null;
  /** A link asked to authorize this connector: offer "Authorize <this>…" (the title). */
  confirmAuthorize?: string | null;
  /** An authorization waits on the browser: a spinner, "Open the page again", "Copy link" (this
   * consent page) and Cancel. */
  authorizing?: { url: string } | null;
  /** A failed authorization: offer Retry. */
  retry?: boolean;
  /** A write to a client's config that can be undone: offer Undo (its `ClientWrite.undo_id`). */
  undo?: number | null;
}

/** An authorization that finishes by pasting the redirected address (or the code). */
export interface PasteFlow {
  url: string;
  why: string | null;
  notice: string | null;
  /** What the user has typed so far (kept across re-renders of the row). */
  draft: string;
  error: BackendError | null;
  busy: boolean;
  /** The row's state when the flow started; a state change closes the panel. */
  forState: ConnectorStateId;
}

/** "Disconnect" waiting for its confirmation, or under way. */
export interface DisconnectUi {
  phase: "confirm" | "busy";
  /** "Also forget this app's registration with the server" (kept across re-renders). */
  forget: boolean;
}

/** The last Test of a row in this session. */
export interface CheckUi {
  result: ConnectorCheck;
  /** The credential's `updated_at` when the answer came, and the row's state: a new credential
   * or another state outdates a Test that asked for authorizing. */
  credentialAt: string | null;
  forState: ConnectorStateId;
}

export interface RowUi {
  notice: RowNotice | null;
  pending: boolean;
  /** The runtime an "Add to …" is under way for. */
  adding?: string | null;
  flow: PasteFlow | null;
  /** The Keys part: a Replace open, a Clear to confirm, a save under way, an error. */
  keys?: KeysUi | null;
  /** The provider offers no way to register Patchbay: the form that asks for a client. */
  clientEntry?: ClientEntry | null;
  /** The refresh history drawer is open (kept across re-renders of the row). */
  historyOpen?: boolean;
  /** A "Refresh now" is under way. */
  refreshing?: boolean;
  disconnect?: DisconnectUi | null;
  /** A "Test" is under way. */
  testing?: boolean;
  /** The last Test's answer (kept until dismissed or tested again). */
  check?: CheckUi | null;
  /** A "Save … to catalog" is under way. */
  writingBack?: boolean;
  /** The health drawer is open (kept across re-renders of the row). */
  healthOpen?: boolean;
  /** The test result's tool list is open (kept across re-renders of the row). */
  toolsOpen?: boolean;
  /** A "Manage with Patchbay" is under way. */
  managing?: boolean;
  /** A "Remove from my connectors" is under way. */
  removing?: boolean;
  /** The "Add to another client" drawer is open (kept across re-renders of the row). */
  clientsOpen?: boolean;
  /** How "Add to" connects the client: `stdio` (default) or `gateway`. */
  via?: "stdio" | "gateway";
  /** The client an "Add to" is under way for. */
  addingClient?: string | null;
  /** The `client/entry` a "Switch to Patchbay" is under way for. */
  switching?: string | null;
}

// ---- other MCP clients (issue 12) ----------------------------------------------------------

/** What a row needs to offer "Add to CLIENT" and "Switch CLIENT to Patchbay". */
export interface RowClients {
  /** The clients found on this machine (`client_targets` with `found`). */
  targets: ClientTarget[];
  /** The mcp-remote entries that reach this connector. */
  switches: SwitchCandidate[];
}

export const NO_CLIENTS: RowClients = { targets: [], switches: [] };

/** Patchbay fronts remote servers only: `patchbay connect` and the gateway refuse stdio ones. */
export function canAddToClients(c: Connector): boolean {
  return c.transport !== "stdio" && c.transport !== "unknown";
}

/** A client's name from its id, as the targets name it. */
export function clientName(id: string, targets: ClientTarget[]): string {
  return targets.find((t) => t.client === id)?.display_name ?? id;
}

/** The result line of an Add or a Switch, and what else happened (backup, gateway client). */
export function writtenText(w: ClientWrite): { text: string; detail: string } {
  const text =
    w.change === "added"
      ? `Added ${w.name} to ${w.client_name} (\`${w.file}\`).`
      : w.change === "replaced"
        ? `${w.client_name}’s “${w.name}” now goes through Patchbay (\`${w.file}\`).`
        : `${w.client_name} already has ${w.name} through Patchbay (\`${w.file}\`).`;
  const more: string[] = [];
  if (w.warning) more.push(w.warning);
  if (w.name !== w.connector) more.push(`“${w.name}” reaches the connector ${w.connector}.`);
  if (w.managed) more.push(`${w.connector} is now managed by Patchbay.`);
  more.push(w.via === "gateway" ? "It connects through the gateway with its own secret." : "It runs patchbay connect.");
  if (w.gateway_client) more.push(`Gateway client “${w.gateway_client}” created for it.`);
  if (w.backup) more.push(`The file as it was is saved in ${w.backup}.`);
  if (w.change !== "unchanged") more.push(`Restart ${w.client_name} (or reload its MCP servers) to pick it up.`);
  return { text, detail: more.join(" ") };
}

/** The "Add to another client" drawer: how to connect, then one button per client found. */
function buildClientsDrawer(c: Connector, ui: RowUi, targets: ClientTarget[], id: string): HTMLElement {
  const via = ui.via ?? "stdio";
  const drawer = el("details", "drawer clients");
  drawer.id = `${id}-clients`;
  drawer.dataset.drawer = "clients";
  drawer.open = ui.clientsOpen === true;
  const summary = el("summary", "drawer__line");
  summary.dataset.control = "clients";
  summary.append(icon("client", "icon drawer__icon"));
  const text = el("span", "drawer__text", "Use in another client");
  text.id = `${id}-clients-text`;
  const toggle = el("span", "drawer__toggle");
  toggle.append(targets.map((t) => t.display_name).join(", "), icon("chevron", "icon drawer__chevron"));
  summary.append(text, el("span", "drawer__sep", " · "), toggle);
  drawer.append(summary);

  const body = el("div", "clients__body");
  const group = el("fieldset", "clients__via");
  group.append(el("legend", "clients__legend", "Connect through"));
  const options: [string, string, string][] = [
    ["stdio", "patchbay connect", "The client starts Patchbay's bridge (stdio). Works in every client, with or without the app running."],
    ["gateway", "The gateway (HTTP)", "The client connects to the app's gateway with a secret Patchbay mints for it. The app (or patchbay gateway serve) must be running."],
  ];
  for (const [value, label, hint] of options) {
    const option = el("label", "clients__option");
    option.title = hint;
    const radio = el("input");
    radio.type = "radio";
    radio.name = `${id}-via`;
    radio.value = value;
    radio.dataset.control = "via";
    radio.checked = via === value;
    option.append(radio, el("span", "", label));
    group.append(option);
  }
  body.append(group);
  const actions = el("div", "row__actions clients__actions");
  for (const t of targets) {
    const stdioOnly = via === "gateway" && !t.http;
    const busy = ui.addingClient === t.client;
    const btn = el("button", "btn", busy ? `Adding to ${t.display_name}…` : `Add to ${t.display_name}`);
    btn.type = "button";
    btn.dataset.control = "add-client";
    btn.dataset.client = t.client;
    btn.dataset.via = stdioOnly ? "stdio" : via;
    btn.title = `Writes ${c.name} into ${t.file}${stdioOnly ? " (through patchbay connect: it launches commands only)" : ""}`;
    btn.setAttribute("aria-describedby", `${id}-title`);
    if (ui.addingClient) btn.setAttribute("aria-disabled", "true");
    actions.append(btn);
  }
  body.append(actions);
  if (via === "gateway" && targets.some((t) => !t.http)) {
    const names = targets.filter((t) => !t.http).map((t) => t.display_name).join(", ");
    body.append(el("p", "clients__note", `${names} only launches commands: it gets patchbay connect.`));
  }
  drawer.append(body);
  return drawer;
}

/** "Switch CLIENT to Patchbay" for each mcp-remote entry that reaches this connector. */
function buildSwitchActions(ui: RowUi, switches: SwitchCandidate[], targets: ClientTarget[], id: string): HTMLElement {
  const actions = el("div", "row__actions row__switch");
  for (const s of switches) {
    const key = `${s.client}/${s.entry}`;
    const name = clientName(s.client, targets);
    const busy = ui.switching === key;
    const btn = el("button", "btn", busy ? `Switching ${name}…` : `Switch ${name} to Patchbay`);
    btn.type = "button";
    btn.dataset.control = "switch-entry";
    btn.dataset.client = s.client;
    btn.dataset.entry = s.entry;
    btn.title = `“${s.entry}” in ${s.file} runs npx mcp-remote ${s.url} (its own token, its own node process). Switching makes it run patchbay connect, the credential in Patchbay's keeping.`;
    btn.setAttribute("aria-describedby", `${id}-title`);
    if (ui.switching) btn.setAttribute("aria-disabled", "true");
    actions.append(btn);
  }
  return actions;
}

// ---- gateway clients (issue 12) -----------------------------------------------------------

/** "All connectors in use" or "Only GitHub, Sentry" (titles where the report knows them). */
export function gatewayScope(g: GatewayClient, titles: Map<string, string>): string {
  if (!g.only) return "All connectors in use";
  if (g.only.length === 0) return "No connector";
  return `Only ${g.only.map((n) => titles.get(n) ?? n).join(", ")}`;
}

export function buildGatewayRow(
  g: GatewayClient,
  phase: "idle" | "confirm" | "busy",
  titles: Map<string, string>,
  nowMs: number,
): HTMLLIElement {
  const id = idFor("g", g.label);
  const li = el("li", "urow grow");
  li.setAttribute("role", "listitem");
  li.dataset.gatewayClient = g.label;
  const main = el("div", "urow__main");
  const head = el("div", "row__head");
  const title = el("span", "row__title", g.label);
  title.id = `${id}-title`;
  head.append(title);
  main.append(head);
  const meta = el("p", "row__meta");
  meta.append(gatewayScope(g, titles));
  const created = parseTime(g.created_at);
  if (created !== null) meta.append(" · created ", timeText("ago", created, nowMs, "row__time"));
  main.append(meta);
  const side = el("div", "row__side");
  const btn = el("button", "btn btn--danger");
  btn.type = "button";
  btn.dataset.control = "revoke";
  btn.setAttribute("aria-describedby", `${id}-title`);
  setRevokeButton(btn, phase);
  side.append(btn);
  li.append(main, side);
  return li;
}

export function setRevokeButton(btn: HTMLButtonElement, phase: "idle" | "confirm" | "busy"): void {
  btn.dataset.phase = phase;
  btn.classList.toggle("btn--danger-confirm", phase === "confirm");
  btn.textContent = phase === "idle" ? "Revoke" : phase === "confirm" ? "Confirm revoke" : "Revoking…";
  if (phase === "busy") btn.setAttribute("aria-disabled", "true");
  else btn.removeAttribute("aria-disabled");
}

// ---- where a connector comes from (issue 11) --------------------------------------------

/** The tools a stored credential can have been adopted from, as the window names them. */
export const CREDENTIAL_SOURCES: Record<string, string> = {
  claude_code: "Claude Code",
  codex: "Codex",
  mcp_remote: "mcp-remote",
};

/** "Found in Cursor, Claude Code": each client once, in the order the backend found them. */
export function foundInText(c: Connector): string | null {
  const names: string[] = [];
  for (const f of c.found_in ?? []) {
    const name = f.display_name || f.client;
    if (!names.includes(name)) names.push(name);
  }
  return names.length > 0 ? `Found in ${names.join(", ")}` : null;
}

/** "Credential from mcp-remote": only for a credential Patchbay adopted rather than obtained. */
export function credentialSourceText(c: Connector): string | null {
  const src = c.credential_source ?? null;
  if (src === null || src === "patchbay") return null;
  return `Credential from ${CREDENTIAL_SOURCES[src] ?? src}`;
}

/** The user put it in use (the gallery's Add, `patchbay enable`): it can be taken out again. */
export function canRemove(c: Connector): boolean {
  return (c.in_use_because ?? []).includes("enabled");
}

// ---- refresh history --------------------------------------------------------------------

export type OutcomeTone = "ok" | "warning" | "error" | "neutral";

export const OUTCOME_LABELS: Record<string, string> = {
  refreshed: "Refreshed",
  adopted: "Adopted",
  retryable: "Retryable",
  ambiguous: "Answer lost",
  transient: "Transient",
  rejected: "Request refused",
  permanent: "Permanent",
  retired: "Retired",
};

/**
 * What an outcome means for the credential: a new pair (ok); a failure the next pass retries and
 * that leaves the refresh token usable (warning); or one that spent, dropped or retired it, so
 * the connector will need authorizing again (error).
 */
export function outcomeTone(outcome: string): OutcomeTone {
  switch (outcome) {
    case "refreshed":
    case "adopted":
      return "ok";
    case "transient":
    case "retryable":
    case "rejected":
    // the refresh token is kept and presented again
    case "ambiguous":
      return "warning";
    case "permanent":
    case "retired":
      return "error";
    default:
      return "neutral";
  }
}

export function outcomeLabel(outcome: string): string {
  return OUTCOME_LABELS[outcome] ?? outcome;
}

export const PASTE_LABEL = "Paste the address you landed on, or the code";

/** A DOM-id-safe token for a connector or credential name. */
export function idFor(prefix: string, name: string): string {
  return `${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, (ch) => `_${ch.charCodeAt(0).toString(16)}`)}`;
}

/** The command(s) that set a connector's missing variables. */
export function secretCommand(c: Connector): string | null {
  if (c.missing_variables.length === 0) return null;
  return c.missing_variables.map((v) => `patchbay secret set ${v.name}`).join(" && ");
}

export function primaryLabel(c: Connector): string | null {
  switch (c.action) {
    case "authorize":
      return c.state === "needs_authorization" ? "Authorize" : null;
    case "reauthorize":
      return c.state === "needs_reauth" ? "Re-authorize" : null;
    // The row's Keys part is its action: a field per missing key.
    case "set_variable":
      return null;
    case "edit_catalog":
      return c.source ? "Copy catalog path" : null;
    default:
      return null;
  }
}

export function badge(state: ConnectorStateId, label: string, id?: string): HTMLSpanElement {
  const b = el("span", `badge badge--${state}`);
  if (id) b.id = id;
  b.append(icon(state, "icon badge__icon"), el("span", "badge__label", label));
  return b;
}

/** A time element whose text the ticker refreshes in place. */
type RelKind = "expires" | "ago" | "until";

function relText(kind: string | undefined, t: number, nowMs: number): string {
  return kind === "expires" ? expiryText(t, nowMs) : kind === "until" ? untilText(t, nowMs) : agoText(t, nowMs);
}

function timeText(kind: RelKind, t: number, nowMs: number, className: string): HTMLTimeElement {
  const node = el("time", className);
  node.dateTime = new Date(t).toISOString();
  node.dataset.rel = kind;
  node.title = absoluteText(t);
  node.textContent = relText(kind, t, nowMs);
  return node;
}

export function refreshTimes(root: ParentNode, nowMs: number): void {
  for (const node of root.querySelectorAll<HTMLTimeElement>("time[data-rel]")) {
    const t = Date.parse(node.dateTime);
    if (Number.isNaN(t)) continue;
    const text = relText(node.dataset.rel, t, nowMs);
    if (node.textContent !== text) node.textContent = text;
  }
}

export function buildRow(
  c: Connector,
  ui: RowUi,
  nowMs: number,
  health: HealthRow | null = null,
  clients: RowClients = NO_CLIENTS,
): HTMLLIElement {
  const id = idFor("c", c.name);
  const degraded = health?.degraded ?? null;
  const li = el(
    "li",
    `row row--${c.state}${c.needs_attention ? " row--attention" : ""}${degraded ? " row--degraded" : ""}`,
  );
  li.setAttribute("role", "listitem");
  li.tabIndex = -1;
  li.dataset.connector = c.name;
  li.dataset.state = c.state;
  li.setAttribute("aria-labelledby", `${id}-title ${id}-badge${degraded ? ` ${id}-degraded-badge` : ""}`);
  const describedBy = [`${id}-detail`];

  const main = el("div", "row__main");
  const head = el("div", "row__head");
  const title = el("span", "row__title", c.title || c.name);
  title.id = `${id}-title`;
  if (c.description) title.title = c.description;
  head.append(title, el("span", "row__name", c.name), el("span", "row__transport", c.transport));
  main.append(head);

  const detail = el("p", "row__detail");
  detail.id = `${id}-detail`;
  if (c.detail) appendRich(detail, c.detail);
  main.append(detail);

  const foundIn = foundInText(c);
  if (foundIn) {
    const line = el("p", "row__found");
    line.id = `${id}-found`;
    line.append(icon("client", "icon row__found-icon"), el("span", "", foundIn));
    line.title = c.found_in.map((f) => `${f.display_name || f.client}: ${f.file} (as “${f.server_name}”)`).join("\n");
    main.append(line);
    describedBy.push(line.id);
  }

  if (c.unavailable_reason) {
    const reason = el("p", "row__reason");
    reason.id = `${id}-reason`;
    reason.append(el("span", "row__reason-label", "Reason: "));
    appendRich(reason, c.unavailable_reason);
    main.append(reason);
    describedBy.push(reason.id);
  }

  if (degraded) {
    main.append(buildDegraded(degraded, id, nowMs));
    describedBy.push(`${id}-degraded`);
  }

  const keys = buildKeys(c, ui.keys, id);
  if (keys) {
    main.append(keys);
    if (c.missing_variables.length > 0) describedBy.push(keys.id);
  }

  const expires = parseTime(c.credential?.expires_at);
  if (c.credential && expires !== null) {
    const meta = el("p", "row__meta");
    meta.id = `${id}-expiry`;
    meta.append("Token ", timeText("expires", expires, nowMs, "row__time"));
    if (expires <= nowMs && c.credential.has_refresh_token) meta.append(" · renews automatically");
    main.append(meta);
    describedBy.push(meta.id);
  }

  const credFrom = credentialSourceText(c);
  if (credFrom) {
    const line = el("p", "row__credsource");
    line.id = `${id}-credsource`;
    line.dataset.source = c.credential_source ?? "";
    line.append(credFrom);
    line.title = "Patchbay adopted the token this tool already held, with the client it was issued to, so it renews without a new sign-in.";
    main.append(line);
    describedBy.push(line.id);
  }

  const rotatedBy = c.credential?.last_rotated_by;
  if (rotatedBy) {
    const line = el("p", "row__rotated");
    line.id = `${id}-rotated`;
    line.append(`Last rotated by ${runtimeName(rotatedBy)}`);
    const at = parseTime(c.credential?.last_rotated_at);
    if (at !== null) line.append(", ", timeText("ago", at, nowMs, "row__time"));
    main.append(line);
    describedBy.push(line.id);
  }

  const history = c.refresh_history ?? [];
  if (history.length > 0) {
    main.append(buildRefreshDrawer(history, ui.historyOpen === true, id, nowMs));
    describedBy.push(`${id}-refresh`);
  }

  if (health && health.calls > 0) {
    // The board's tools are the last successful check's; a Test in this session that answered
    // lists its own instead.
    const tools = ui.check?.result.ok ? null : health.tools;
    main.append(buildHealthDrawer(health, tools, ui.healthOpen === true, id, nowMs));
    describedBy.push(`${id}-health`);
  }

  const bridges = c.bridges ?? [];
  if (bridges.length > 0) {
    const list = el("ul", "row__bridges");
    list.id = `${id}-bridges`;
    list.setAttribute("aria-label", "Bridged to");
    for (const b of bridges) {
      const item = el("li", `bridge bridge--${b.in_store ? "written" : "pending"}`);
      item.dataset.runtime = b.runtime;
      item.append(`${runtimeName(b.runtime)} · `, el("code", "", b.server_name));
      item.append(b.in_store ? " ✓ in store" : " · not yet written");
      list.append(item);
    }
    main.append(list);
    describedBy.push(list.id);
  }

  if (c.one_shot_note) {
    const note = el("p", "row__oneshot");
    note.id = `${id}-oneshot`;
    note.append(icon("oneshot", "icon row__oneshot-icon"));
    const text = el("span");
    appendRich(text, c.one_shot_note);
    note.append(text);
    main.append(note);
    describedBy.push(note.id);
  }

  if (canAddToClients(c) && clients.targets.length > 0) {
    main.append(buildClientsDrawer(c, ui, clients.targets, id));
  }

  if (ui.check) main.append(buildCheckResult(c, ui, ui.check.result, id, nowMs));
  if (ui.notice) main.append(buildNotice(ui.notice, id));
  if (ui.flow) main.append(buildPasteFlow(c, ui.flow, id));
  if (ui.clientEntry) main.append(buildClientEntry(c, ui.clientEntry, id));

  const side = el("div", "row__side");
  const badges = el("div", "row__badges");
  badges.append(badge(c.state, c.label || STATE_LABELS[c.state] || c.state, `${id}-badge`));
  if (degraded) {
    const b = el("span", "badge badge--degraded");
    b.id = `${id}-degraded-badge`;
    b.title = "Agents are told this connector is unavailable until a check passes";
    b.append(icon("degraded", "icon badge__icon"), el("span", "badge__label", "Degraded"));
    badges.append(b);
  }
  side.append(badges);
  const label = primaryLabel(c);
  if (label) {
    const actions = el("div", "row__actions");
    const btn = el("button", "btn", label);
    btn.type = "button";
    btn.dataset.control = "primary";
    btn.dataset.action = c.action ?? "";
    btn.setAttribute("aria-describedby", `${id}-title`);
    if (c.action === "authorize" || c.action === "reauthorize") {
      btn.classList.add("btn--primary");
      if (ui.pending) {
        btn.textContent = "Opening browser…";
        btn.setAttribute("aria-disabled", "true");
      }
    } else if (c.source) {
      btn.title = c.source;
    }
    actions.append(btn);
    side.append(actions);
  }
  if (c.origin === "client") {
    const actions = el("div", "row__actions row__manage");
    const btn = el("button", "btn", ui.managing ? "Copying to your catalog…" : "Manage with Patchbay");
    btn.type = "button";
    btn.dataset.control = "manage";
    btn.title = "Copy this server into your Patchbay catalog; a secret in its config goes to the keychain, never into the file";
    btn.setAttribute("aria-describedby", `${id}-title`);
    if (ui.managing) btn.setAttribute("aria-disabled", "true");
    actions.append(btn);
    side.append(actions);
  }
  const addable = addableRuntimes(c);
  if (addable.length > 0) {
    const actions = el("div", "row__actions row__add");
    for (const runtime of addable) {
      const busy = ui.adding === runtime;
      const btn = el("button", "btn", busy ? "Adding…" : `Add to ${runtimeName(runtime)}`);
      btn.type = "button";
      btn.dataset.control = "add-runtime";
      btn.dataset.runtime = runtime;
      btn.setAttribute("aria-describedby", `${id}-title`);
      if (busy) btn.setAttribute("aria-disabled", "true");
      actions.append(btn);
    }
    side.append(actions);
  }

  if (clients.switches.length > 0) side.append(buildSwitchActions(ui, clients.switches, clients.targets, id));

  const secondary = buildSecondaryActions(c, ui, id);
  const above = side.querySelector<HTMLElement>(":scope > .row__actions:last-of-type");
  if (secondary && !c.credential && above) {
    // Test alone: beside the row's other buttons rather than on a line of its own.
    above.append(...secondary.querySelector(".row__actions")!.childNodes);
  } else if (secondary) {
    side.append(secondary);
  }

  if (canRemove(c)) {
    const actions = el("div", "row__actions row__remove");
    const btn = el("button", "btn btn--quiet", ui.removing ? "Removing…" : "Remove from my connectors");
    btn.type = "button";
    btn.dataset.control = "remove";
    btn.title = "Stop using it: it goes back to Add connector (your catalog says \"enabled\": false)";
    btn.setAttribute("aria-describedby", `${id}-title`);
    if (ui.removing) btn.setAttribute("aria-disabled", "true");
    actions.append(btn);
    side.append(actions);
  }

  li.setAttribute("aria-describedby", describedBy.join(" "));
  li.append(main, side);
  return li;
}

// ---- the gallery ("Add connector") -------------------------------------------------------

/** What a gallery entry needs, in the words the window uses. */
export function needsText(g: GalleryEntry): string {
  switch (g.needs) {
    case "oauth":
      return "Sign in";
    case "secret":
      return g.variables.length > 0 ? `Needs an API key: ${g.variables.join(", ")}` : "Needs an API key";
    case "nothing":
      return "Ready to use";
    default:
      return g.needs;
  }
}

/** Whether `g` matches the search (name, title, description; case-insensitive). */
export function galleryMatches(g: GalleryEntry, query: string): boolean {
  const q = query.trim().toLowerCase();
  if (q === "") return true;
  return [g.name, g.title, g.description ?? ""].some((x) => x.toLowerCase().includes(q));
}

export interface GalleryUi {
  busy: boolean;
  error: BackendError | null;
}

export function buildGalleryEntry(g: GalleryEntry, ui: GalleryUi | null): HTMLLIElement {
  const id = idFor("g", g.name);
  const li = el("li", `gentry${g.disabled ? " gentry--disabled" : ""}`);
  li.setAttribute("role", "listitem");
  li.dataset.gallery = g.name;
  li.dataset.needs = g.needs;
  li.setAttribute("aria-labelledby", `${id}-title`);
  const main = el("div", "gentry__main");
  const head = el("div", "row__head");
  const title = el("span", "row__title", g.title || g.name);
  title.id = `${id}-title`;
  head.append(title, el("span", "row__name", g.name), el("span", "row__transport", g.transport));
  main.append(head);
  if (g.description) main.append(el("p", "row__detail gentry__description", g.description));
  const needs = el("p", `gentry__needs gentry__needs--${g.needs}`);
  needs.id = `${id}-needs`;
  needs.append(icon(g.needs === "oauth" ? "needs_authorization" : g.needs === "secret" ? "missing_configuration" : "ready", "icon gentry__icon"));
  needs.append(el("span", "", needsText(g)));
  main.append(needs);
  const describedBy = [needs.id];
  if (g.disabled) {
    const hidden = el("p", "gentry__hidden");
    hidden.id = `${id}-hidden`;
    hidden.append("Hidden (", el("code", "", "enabled: false"), ")");
    hidden.title = "A catalog says \"enabled\": false for it, so it is not used even where a client configures it. Add puts it back in use.";
    main.append(hidden);
    describedBy.push(hidden.id);
  }
  if (ui?.error) {
    const err = buildErrorNotice(ui.error, `${id}-error`, "gentry__error");
    main.append(err);
    describedBy.push(err.id);
  }
  li.setAttribute("aria-describedby", describedBy.join(" "));

  const side = el("div", "row__side");
  const add = el("button", "btn gentry__add", ui?.busy ? "Adding…" : "Add");
  add.type = "button";
  add.dataset.control = "enable";
  add.setAttribute("aria-label", `${g.disabled ? "Add back" : "Add"} ${g.title || g.name}`);
  add.setAttribute("aria-describedby", describedBy.join(" "));
  if (ui?.busy) add.setAttribute("aria-disabled", "true");
  side.append(add);
  li.append(main, side);
  return li;
}

/** Whether the row can be tested: every connector with a known transport. */
export function canTest(c: Connector): boolean {
  return c.transport !== "unknown";
}

/**
 * "Test" (every row with a known transport), "Refresh now" (a stored credential with a refresh
 * token: without one there is nothing to renew, the refresher skips it) and "Disconnect" (any
 * stored credential; two steps, with the forget-registration option).
 */
function buildSecondaryActions(c: Connector, ui: RowUi, id: string): HTMLElement | null {
  if (!canTest(c) && !c.credential) return null;
  const box = el("div", "row__cred");
  const actions = el("div", "row__actions");
  box.append(actions);
  if (canTest(c)) {
    const test = el("button", "btn", ui.testing ? "Testing…" : "Test");
    test.type = "button";
    test.dataset.control = "test";
    test.title = "Connect for real: the MCP handshake and the tool list, with the stored credential";
    test.setAttribute("aria-describedby", `${id}-title`);
    if (ui.testing) test.setAttribute("aria-disabled", "true");
    actions.append(test);
  }
  if (!c.credential) return box;
  const disconnect = ui.disconnect ?? null;
  if (c.credential.has_refresh_token) {
    const refresh = el("button", "btn", ui.refreshing ? "Refreshing…" : "Refresh now");
    refresh.type = "button";
    refresh.dataset.control = "refresh";
    refresh.setAttribute("aria-describedby", `${id}-title`);
    if (ui.refreshing || disconnect?.phase === "busy") refresh.setAttribute("aria-disabled", "true");
    actions.append(refresh);
  }
  const off = el("button", "btn");
  off.type = "button";
  off.dataset.control = "disconnect";
  off.dataset.phase = disconnect?.phase ?? "idle";
  off.textContent = !disconnect ? "Disconnect" : disconnect.phase === "confirm" ? "Confirm disconnect" : "Disconnecting…";
  off.setAttribute("aria-describedby", `${id}-title`);
  if (disconnect?.phase === "confirm") off.classList.add("btn--danger-confirm");
  if (disconnect?.phase === "busy" || ui.refreshing) off.setAttribute("aria-disabled", "true");
  actions.append(off);
  if (disconnect) {
    const label = el("label", "row__forget");
    label.title =
      "Patchbay registered itself as an app (OAuth client) with this server. Forgetting it means the next authorization registers anew.";
    const check = el("input");
    check.type = "checkbox";
    check.id = `${id}-forget`;
    check.dataset.control = "forget-registration";
    check.checked = disconnect.forget;
    if (disconnect.phase === "busy") check.disabled = true;
    label.append(check, el("span", "", "Also forget this app’s registration with the server"));
    box.append(label);
  }
  return box;
}

/** The last-refresh line, whose summary opens the drawer listing every recorded attempt. */
function buildRefreshDrawer(history: RefreshEntry[], open: boolean, id: string, nowMs: number): HTMLElement {
  const last = history[0]!;
  const tone = outcomeTone(last.outcome);
  const drawer = el("details", `refresh refresh--${tone}`);
  drawer.id = `${id}-drawer`;
  drawer.dataset.drawer = "refresh";
  drawer.dataset.tone = tone;
  drawer.open = open;

  const summary = el("summary", "refresh__line");
  summary.dataset.control = "history";
  summary.append(icon(tone === "ok" || tone === "neutral" ? "refresh" : "warning", "icon refresh__icon"));
  const text = el("span", "refresh__text");
  text.id = `${id}-refresh`;
  const at = parseTime(last.at);
  const when = at !== null ? timeText("ago", at, nowMs, "refresh__time") : null;
  if (tone === "ok") {
    text.append("Last refreshed");
    if (when) text.append(" ", when);
    if (last.outcome === "adopted") text.append(" (adopted)");
  } else {
    text.append(tone === "neutral" ? `Last refresh: ${outcomeLabel(last.outcome).toLowerCase()}` : "Last refresh: failed");
    if (when) text.append(" ", when);
    if (tone !== "neutral") {
      const why = [last.http_status, last.outcome].filter((x) => x !== null).join(", ");
      text.append(` (${why})`);
    }
  }
  const toggle = el("span", "refresh__toggle");
  toggle.append("History", icon("chevron", "icon refresh__chevron"));
  summary.append(text, el("span", "refresh__sep", " · "), toggle);
  drawer.append(summary);

  const list = el("ol", "history");
  list.setAttribute("aria-label", "Refresh attempts, newest first");
  history.forEach((entry, i) => list.append(buildHistoryEntry(entry, i, id, nowMs)));
  drawer.append(list);
  return drawer;
}

function buildHistoryEntry(entry: RefreshEntry, index: number, id: string, nowMs: number): HTMLLIElement {
  const tone = outcomeTone(entry.outcome);
  const item = el("li", `history__entry history__entry--${tone}`);
  item.dataset.outcome = entry.outcome;
  const at = parseTime(entry.at);
  const when = at !== null ? timeText("ago", at, nowMs, "history__time") : el("span", "history__time", entry.at);
  const outcome = el("span", `outcome outcome--${tone}`, outcomeLabel(entry.outcome));
  const body = el("div", "history__body");
  body.append(el("p", "history__summary", entry.summary));
  const facts: string[] = [];
  if (entry.http_status !== null && entry.http_status !== undefined) facts.push(`HTTP ${entry.http_status}`);
  if (entry.retries > 0) facts.push(entry.retries === 1 ? "1 retry" : `${entry.retries} retries`);
  if (facts.length > 0) {
    const meta = el("p", "history__facts");
    facts.forEach((f, i) => {
      if (i > 0) meta.append(" · ");
      meta.append(el("span", f.startsWith("HTTP") ? "history__status" : "history__retries", f));
    });
    body.append(meta);
  }
  if (entry.detail) {
    const pre = el("pre", "history__detail", entry.detail);
    pre.id = `${id}-h${index}-detail`;
    pre.dataset.control = `detail-${index}`;
    pre.tabIndex = 0;
    pre.setAttribute("aria-label", "Raw answer");
    body.append(pre);
  }
  item.append(when, outcome, body);
  return item;
}

// ---- connection checks and health -------------------------------------------------------

export const TRANSPORT_LABELS: Record<string, string> = {
  "streamable-http": "streamable HTTP",
  sse: "SSE",
  stdio: "stdio",
};

/** "streamable HTTP", "SSE", "stdio": how people name a transport. */
export function transportLabel(t: string | null | undefined): string {
  return t ? (TRANSPORT_LABELS[t] ?? t) : "an unknown transport";
}

export const CHECK_ERROR_LABELS: Record<string, string> = {
  unreachable: "Unreachable",
  timed_out: "Timed out",
  rejected: "Rejected",
  server_error: "Server error",
  needs_authorization: "Needs auth",
  credential_rejected: "Refused",
  protocol: "Protocol",
  spawn_failed: "Won’t start",
  exited: "Exited",
  missing_configuration: "Missing config",
  invalid: "Invalid entry",
};

/** A failure the next check may get past by itself (warning) or one that needs someone (error). */
export function checkErrorTone(kind: string | null): OutcomeTone {
  switch (kind) {
    case "unreachable":
    case "timed_out":
    case "server_error":
    case "protocol":
    case "exited":
      return "warning";
    case null:
      return "neutral";
    default:
      return "error";
  }
}

/** "8 %", "<1 %" (failures, but too few to round up), "0 %". */
export function percentText(rate: number, failures: number): string {
  const pct = Math.round(rate * 100);
  if (pct === 0 && failures > 0) return "<1 %";
  return `${pct} %`;
}

/** "12 checks · 8 % failed · p50 40 ms · p95 120 ms" (the "last error" part is a time element). */
export function healthSummary(h: { calls: number; failures: number; fail_rate: number; p50_ms: number | null; p95_ms: number | null }): string {
  const parts = [`${h.calls} ${h.calls === 1 ? "check" : "checks"}`, `${percentText(h.fail_rate, h.failures)} failed`];
  if (h.p50_ms !== null) parts.push(`p50 ${h.p50_ms} ms`);
  if (h.p95_ms !== null) parts.push(`p95 ${h.p95_ms} ms`);
  return parts.join(" · ");
}

const clockFormat = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });

/** "08:41" today, else the date as well: when a state began. */
function clockTime(t: number, nowMs: number): HTMLTimeElement {
  const node = el("time", "row__since");
  node.dateTime = new Date(t).toISOString();
  node.title = `${absoluteText(t)} (${agoText(t, nowMs)})`;
  const sameDay = new Date(t).toDateString() === new Date(nowMs).toDateString();
  node.textContent = sameDay ? clockFormat.format(new Date(t)) : absoluteText(t);
  return node;
}

/** "Degraded since 08:41: <error>": agents are told the connector is unavailable. */
function buildDegraded(d: Degraded, id: string, nowMs: number): HTMLElement {
  const box = el("div", "row__degraded");
  box.id = `${id}-degraded`;
  box.dataset.kind = d.kind;
  box.append(icon("degraded", "icon row__degraded-icon"));
  const body = el("div", "row__degraded-body");
  const line = el("p", "row__degraded-text");
  line.append(el("strong", "row__degraded-label", "Degraded"));
  const since = parseTime(d.since);
  if (since !== null) line.append(" since ", clockTime(since, nowMs));
  line.append(": ", el("span", "row__degraded-error", d.error));
  body.append(line, el("p", "row__degraded-note", "Agents are told it is unavailable until a check passes."));
  box.append(body);
  return box;
}

/** The tools as `<connector>.<tool>` chips; title and description in the tooltip. */
function buildToolList(tools: ToolInfo[], label: string): HTMLUListElement {
  const list = el("ul", "toollist");
  list.setAttribute("aria-label", label);
  for (const t of tools) {
    const item = el("li", "tool");
    item.dataset.tool = t.name;
    const tip = [t.title, t.description].filter((x): x is string => !!x && x.trim() !== "");
    if (tip.length > 0) item.title = tip.join(" — ");
    item.append(el("code", "tool__name", t.name));
    list.append(item);
  }
  return list;
}

/** The compact health line over a drawer with the tools it offered last and its recent failures. */
function buildHealthDrawer(
  h: HealthRow,
  tools: HealthRow["tools"],
  open: boolean,
  id: string,
  nowMs: number,
): HTMLElement {
  const tone: OutcomeTone = h.degraded ? "error" : h.consecutive_failures > 0 ? "warning" : "neutral";
  const drawer = el("details", `drawer health drawer--${tone}`);
  drawer.id = `${id}-health-drawer`;
  drawer.dataset.drawer = "health";
  drawer.dataset.tone = tone;
  drawer.open = open;

  const summary = el("summary", "drawer__line");
  summary.dataset.control = "health";
  summary.append(icon("pulse", "icon drawer__icon"));
  const text = el("span", "drawer__text health__text");
  text.id = `${id}-health`;
  text.append(healthSummary(h));
  const lastError = parseTime(h.last_error_at);
  if (lastError !== null) {
    const when = timeText("ago", lastError, nowMs, "drawer__time");
    if (h.last_error) when.title = `${absoluteText(lastError)}: ${h.last_error}`;
    text.append(" · last error ", when);
  }
  const toggle = el("span", "drawer__toggle");
  toggle.append("Details", icon("chevron", "icon drawer__chevron"));
  summary.append(text, el("span", "drawer__sep", " · "), toggle);
  drawer.append(summary);

  const panel = el("div", "health__panel");
  const facts = el("p", "health__facts");
  const checked = parseTime(h.last_check_at);
  const passed = parseTime(h.last_ok_at);
  const next = parseTime(h.next_check_at);
  if (checked !== null) facts.append("Last checked ", timeText("ago", checked, nowMs, "drawer__time"));
  if (passed !== null) {
    if (facts.childNodes.length > 0) facts.append(" · ");
    facts.append(facts.childNodes.length > 0 ? "last passed " : "Last passed ", timeText("ago", passed, nowMs, "drawer__time"));
  } else if (h.calls > 0) {
    facts.append(" · never passed");
  }
  if (next !== null && next > nowMs) facts.append(" · next counted check ", timeText("until", next, nowMs, "drawer__time"));
  if (h.consecutive_failures > 0) {
    facts.append(` · ${h.consecutive_failures} ${h.consecutive_failures === 1 ? "failure" : "failures"} in a row`);
  }
  panel.append(facts);

  if (tools && tools.tools.length > 0) {
    const section = el("div", "health__tools");
    const head = el("p", "health__subhead");
    const at = parseTime(tools.checked_at);
    head.append(el("strong", "", `${tools.tools.length} ${tools.tools.length === 1 ? "tool" : "tools"}`));
    const rest = el("span", "health__subnote", " at the last successful check");
    if (at !== null) rest.append(", ", timeText("ago", at, nowMs, "drawer__time"));
    rest.append(`, over ${transportLabel(tools.transport)}`);
    head.append(rest);
    section.append(head, buildToolList(tools.tools, "Tools at the last successful check"));
    panel.append(section);
  }

  if (h.recent_errors.length > 0) {
    const head = el("p", "health__subhead");
    head.append(
      el("strong", "", h.recent_errors.length === 1 ? "1 failed check" : `${h.recent_errors.length} failed checks`),
      el("span", "health__subnote", h.recent_errors.length === 1 ? "" : ", newest first"),
    );
    const list = el("ol", "history health__errors");
    list.setAttribute("aria-label", "Failed checks, newest first");
    h.recent_errors.forEach((r, i) => list.append(buildCheckRecord(r, i, id, nowMs)));
    panel.append(head, list);
  } else {
    panel.append(
      el("p", "health__none", h.calls === 1 ? "The one check recorded passed." : `No failed checks among the last ${h.calls}.`),
    );
  }
  drawer.append(panel);
  return drawer;
}

const ORDINAL = (n: number): string => {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${s}`;
};

function buildCheckRecord(r: CheckRecord, index: number, id: string, nowMs: number): HTMLLIElement {
  const tone = checkErrorTone(r.error_kind);
  const item = el("li", `history__entry history__entry--${tone}`);
  item.dataset.kind = r.error_kind ?? "";
  const at = parseTime(r.at);
  const when = at !== null ? timeText("ago", at, nowMs, "history__time") : el("span", "history__time", r.at);
  const kind = el("span", `outcome outcome--${tone}`, CHECK_ERROR_LABELS[r.error_kind ?? ""] ?? r.error_kind ?? "Failed");
  const body = el("div", "history__body");
  const message = r.error ?? "failed";
  const long = message.length > 240 || message.includes("\n");
  body.append(el("p", "history__summary", long ? `${message.split("\n")[0]!.slice(0, 200)}…` : message));
  const meta = el("p", "history__facts");
  meta.append(el("span", "history__transport", transportLabel(r.transport)));
  if (r.http_status !== null && r.http_status !== undefined) meta.append(" · ", el("span", "history__status", `HTTP ${r.http_status}`));
  meta.append(` · after ${r.latency_ms} ms`);
  if (r.streak > 1) meta.append(` · ${ORDINAL(r.streak)} failure in a row`);
  body.append(meta);
  if (long) {
    const pre = el("pre", "history__detail", message);
    pre.id = `${id}-c${index}-detail`;
    pre.dataset.control = `check-detail-${index}`;
    pre.tabIndex = 0;
    pre.setAttribute("aria-label", "The whole error");
    body.append(pre);
  }
  item.append(when, kind, body);
  return item;
}

function attemptError(a: CheckAttempt): string | null {
  if (a.error === null || a.error === undefined) return null;
  return typeof a.error === "string" ? a.error : a.error.message;
}

/** The command a set_variable check points at: the row's missing variables, or the advice's. */
export function checkCommand(c: Connector, r: ConnectorCheck): string | null {
  const own = secretCommand(c);
  if (own) return own;
  const spans = (r.advice ?? "").split("`").filter((_, i) => i % 2 === 1);
  return spans.find((x) => /^patchbay secret set \S+$/.test(x)) ?? null;
}

/** The row's last Test: what answered, how fast, the tools; or what failed and what to do. */
function buildCheckResult(c: Connector, ui: RowUi, r: ConnectorCheck, id: string, nowMs: number): HTMLElement {
  const kind = r.skipped !== null ? "skipped" : r.ok ? "ok" : "failed";
  const tone = kind === "ok" ? "ok" : kind === "skipped" ? "info" : "error";
  const box = el("section", `check check--${tone}`);
  box.id = `${id}-check`;
  box.dataset.check = kind;
  box.setAttribute("role", tone === "error" ? "alert" : "status");
  box.setAttribute("aria-label", `Test result for ${c.title || c.name}`);
  box.append(icon(kind === "ok" ? "test" : kind === "skipped" ? "info" : "warning", "icon check__icon"));
  const body = el("div", "check__body");
  const at = parseTime(r.checked_at);
  const when = at !== null ? timeText("ago", at, nowMs, "check__time") : null;

  if (kind === "ok") {
    const answered = `Answered in ${r.latency_ms ?? "?"} ms over ${transportLabel(r.transport)}`;
    const n = r.tools.length;
    if (n === 0) {
      const line = el("p", "check__line", `${answered} · no tools`);
      line.id = `${id}-check-line`;
      body.append(line);
    } else {
      const drawer = el("details", "drawer check__tools drawer--ok");
      drawer.dataset.drawer = "tools";
      drawer.open = ui.toolsOpen === true;
      const summary = el("summary", "drawer__line check__line");
      summary.id = `${id}-check-line`;
      summary.dataset.control = "tools";
      const text = el("span", "drawer__text", answered);
      const toggle = el("span", "drawer__toggle");
      toggle.append(`${n} ${n === 1 ? "tool" : "tools"}`, icon("chevron", "icon drawer__chevron"));
      summary.append(text, el("span", "drawer__sep", " · "), toggle);
      drawer.append(summary, buildToolList(r.tools, `Tools ${c.title || c.name} offers`));
      if (r.server) {
        drawer.append(
          el("p", "check__server", `${r.server.name} ${r.server.version} · MCP ${r.server.protocol_version}`),
        );
      }
      body.append(drawer);
    }
    if (r.fell_back_to && r.configured_transport) {
      const fb = el("div", "check__fallback");
      const text = el("p", "check__fallback-text");
      text.append(
        icon("swap", "icon check__fallback-icon"),
        `The server rejected ${transportLabel(r.configured_transport)}; ${transportLabel(r.fell_back_to)} answered.`,
      );
      fb.append(text);
      if (r.write_back) {
        const save = el(
          "button",
          "btn check__save",
          ui.writingBack ? "Saving…" : `Save ${transportLabel(r.write_back.transport)} to catalog`,
        );
        save.type = "button";
        save.dataset.control = "write-back";
        save.dataset.transport = r.write_back.transport;
        save.title = `Writes "type": "${r.write_back.transport}" for ${c.name} to ${r.write_back.file}`;
        if (ui.writingBack) save.setAttribute("aria-disabled", "true");
        fb.append(save);
      }
      body.append(fb);
    }
  } else {
    const title = el("p", "check__title");
    title.id = `${id}-check-line`;
    if (kind === "skipped") {
      title.append(el("strong", "", "Not tested"));
    } else {
      // Not "over <transport>": when both HTTP transports were rejected, `transport` is the last
      // one tried while the error shown is the configured one's (its message names it anyway).
      title.append(el("strong", "", "Test failed"));
      if (r.error?.http_status) title.append(` (HTTP ${r.error.http_status})`);
    }
    body.append(title);
    if (r.error) {
      const msg = el("p", "check__message", r.error.message);
      msg.dataset.kind = r.error.kind;
      body.append(msg);
    }
    for (const a of r.attempts) {
      const err = attemptError(a);
      if (!err || err === r.error?.message) continue;
      body.append(el("p", "check__attempt", `Also tried ${transportLabel(a.transport)}: ${err}`));
    }
    if (r.advice) {
      const advice = el("p", "check__advice");
      appendRich(advice, r.advice);
      body.append(advice);
    }
    const actions = buildCheckActions(c, ui, r);
    if (actions) body.append(actions);
  }
  box.append(body);

  const aside = el("div", "check__aside");
  if (when) aside.append(when);
  const close = el("button", "notice__close");
  close.type = "button";
  close.dataset.control = "dismiss-check";
  close.setAttribute("aria-label", "Dismiss the test result");
  close.title = "Dismiss";
  close.append(icon("close", "icon"));
  aside.append(close);
  box.append(aside);
  return box;
}

/** What a failed or skipped check offers: authorize (the row's own flow), or copy the fix. */
function buildCheckActions(c: Connector, ui: RowUi, r: ConnectorCheck): HTMLElement | null {
  const line = el("div", "check__actions");
  // The row's own button already copies the same command or path.
  if ((r.action === "set_variable" || r.action === "edit_catalog") && r.action === c.action && primaryLabel(c)) {
    if (r.action === "edit_catalog" || checkCommand(c, r) === secretCommand(c)) return null;
  }
  if (r.action === "authorize" || r.action === "reauthorize") {
    const label = r.action === "reauthorize" || c.action === "reauthorize" ? "Re-authorize" : "Authorize";
    const btn = el("button", "btn btn--primary", ui.pending ? "Opening browser…" : label);
    btn.type = "button";
    btn.dataset.control = "check-authorize";
    if (ui.pending) btn.setAttribute("aria-disabled", "true");
    line.append(btn);
  } else if (r.action === "set_variable") {
    const cmd = checkCommand(c, r);
    if (cmd) {
      const btn = el("button", "btn", cmd.includes("&&") ? "Copy commands" : "Copy command");
      btn.type = "button";
      btn.dataset.control = "check-copy";
      btn.dataset.copy = cmd;
      btn.title = cmd;
      line.append(btn);
    }
  } else if (r.action === "edit_catalog" && c.source) {
    const btn = el("button", "btn", "Copy catalog path");
    btn.type = "button";
    btn.dataset.control = "check-copy";
    btn.dataset.copy = c.source;
    btn.title = c.source;
    line.append(btn);
  }
  return line.childElementCount > 0 ? line : null;
}

function buildNotice(n: RowNotice, id: string): HTMLDivElement {
  const box = el("div", `notice notice--${n.tone}`);
  box.id = `${id}-notice`;
  box.setAttribute("role", n.tone === "error" ? "alert" : "status");
  if (n.authorizing) {
    const spinner = el("span", "spinner notice__icon");
    spinner.setAttribute("aria-hidden", "true");
    box.append(spinner);
    box.setAttribute("aria-busy", "true");
  } else {
    box.append(icon(n.tone === "error" ? "warning" : "info", "icon notice__icon"));
  }
  const text = el("p", "notice__text");
  // An error's machine text goes under Details, after one sentence (format.ts humanError).
  const said = n.tone === "error" && n.kind && !n.detail ? humanError(n.kind, n.text) : { sentence: n.text, detail: null };
  appendRich(text, said.sentence);
  if (n.kind) text.dataset.kind = n.kind;
  const body = el("div", "notice__body");
  body.append(text);
  if (n.detail) body.append(el("p", "notice__detail", n.detail));
  if (said.detail) body.append(buildErrorDetail(said.detail));
  if (n.link) body.append(buildLinkLine(n.link, `${id}-notice-link`));
  if (n.authorizing || n.retry) {
    const line = el("div", "row__actions notice__actions");
    const button = (label: string, control: string, title: string): HTMLButtonElement => {
      const btn = el("button", "btn", label);
      btn.type = "button";
      btn.dataset.control = control;
      btn.title = title;
      line.append(btn);
      return btn;
    };
    if (n.authorizing) {
      button("Open the page again", "reopen-authorize", "Open the consent page in your browser again");
      // The address is shown with its own Copy when the browser did not open.
      if (!n.link) {
        button("Copy link", "copy-link", "Copy the consent page's address, to open it in another browser").dataset.copy = n.authorizing.url;
      }
      button("Cancel", "cancel-authorize", "Stop waiting: the flow ends and Patchbay stops listening for the browser");
    } else {
      button("Retry", "retry-authorize", "Start authorizing again");
    }
    body.append(line);
  }
  if (n.confirmAuthorize) {
    const line = el("div", "row__actions notice__actions");
    const btn = el("button", "btn btn--primary", `Authorize ${n.confirmAuthorize}…`);
    btn.type = "button";
    btn.dataset.control = "confirm-authorize";
    btn.title = "Start signing in, in your browser";
    line.append(btn);
    body.append(line);
  }
  if (n.undo != null) {
    const line = el("div", "row__actions notice__actions");
    const btn = el("button", "btn", "Undo");
    btn.type = "button";
    btn.dataset.control = "undo-write";
    btn.dataset.undo = String(n.undo);
    btn.title = "Put the file back exactly as it was before this change";
    line.append(btn);
    body.append(line);
  }
  if (n.replace) {
    const line = el("div", "row__actions notice__actions");
    const btn = el("button", "btn", `Replace ${n.replace.clientName}’s entry`);
    btn.type = "button";
    btn.dataset.control = "replace-entry";
    btn.dataset.client = n.replace.client;
    btn.dataset.via = n.replace.via;
    btn.title = "Point that entry at Patchbay instead (the file as it was is kept as a backup)";
    line.append(btn);
    body.append(line);
  }
  box.append(body);
  const close = el("button", "notice__close");
  close.type = "button";
  close.dataset.control = "dismiss";
  close.setAttribute("aria-label", "Dismiss");
  close.title = "Dismiss";
  close.append(icon("close", "icon"));
  box.append(close);
  return box;
}

/** The paste-back panel: why, the authorize link, and the field for the redirected address. */
function buildPasteFlow(c: Connector, f: PasteFlow, id: string): HTMLElement {
  const box = el("section", "flow");
  box.id = `${id}-flow`;
  box.dataset.flow = "paste_back";
  box.setAttribute("aria-label", `Finish authorizing ${c.title || c.name}`);
  if (f.notice) {
    const n = el("p", "flow__notice");
    n.append(icon("warning", "icon notice__icon"), el("span", "", f.notice));
    box.append(n);
  }
  if (f.why && f.why !== f.notice) box.append(el("p", "flow__why", `Patchbay cannot receive the answer by itself: ${f.why}.`));
  box.append(el("p", "flow__step", "1. Open this address in your browser and approve access:"));
  box.append(buildLinkLine(f.url, `${id}-flow-url`));
  const form = el("form", "flow__form");
  form.dataset.control = "paste-form";
  form.noValidate = true;
  const label = el("label", "flow__label", `2. ${PASTE_LABEL}`);
  label.htmlFor = `${id}-pasted`;
  const line = el("div", "flow__line");
  const input = el("input", "flow__input");
  input.id = `${id}-pasted`;
  input.type = "text";
  input.name = "pasted";
  input.value = f.draft;
  input.autocomplete = "off";
  input.spellcheck = false;
  input.dataset.control = "pasted";
  input.placeholder = "https://…?code=…&state=…";
  if (f.error) {
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", `${id}-flow-error`);
  }
  const complete = el("button", "btn btn--primary", f.busy ? "Completing…" : "Complete");
  complete.type = "submit";
  complete.dataset.control = "complete";
  if (f.busy) complete.setAttribute("aria-disabled", "true");
  const cancel = el("button", "btn", "Cancel");
  cancel.type = "button";
  cancel.dataset.control = "cancel";
  line.append(input, complete, cancel);
  form.append(label, line);
  if (f.error) form.append(buildErrorNotice(f.error, `${id}-flow-error`, "flow__error"));
  box.append(form);
  return box;
}

export function buildUnclaimedRow(u: UnclaimedCredential, nowMs: number, confirming: boolean): HTMLLIElement {
  const id = idFor("u", u.credential_key);
  const li = el("li", "urow");
  li.setAttribute("role", "listitem");
  li.dataset.unclaimed = u.credential_key;
  const main = el("div", "urow__main");
  const head = el("div", "row__head");
  const title = el("span", "row__title", u.server_name);
  title.id = `${id}-title`;
  head.append(title);
  if (u.server_url) head.append(el("span", "row__name", u.server_url));
  main.append(head);
  if (u.why) main.append(el("p", "row__detail", u.why));
  const meta = el("p", "row__meta");
  const updated = parseTime(u.updated_at);
  if (updated !== null) meta.append("Stored ", timeText("ago", updated, nowMs, "row__time"), " · ");
  meta.append("key ", el("code", "urow__key", u.credential_key));
  main.append(meta);

  const side = el("div", "row__side");
  const btn = el("button", "btn btn--danger");
  btn.type = "button";
  btn.dataset.control = "delete";
  btn.setAttribute("aria-describedby", `${id}-title`);
  setDeleteButton(btn, confirming ? "confirm" : "idle");
  side.append(btn);
  li.append(main, side);
  return li;
}

export function setDeleteButton(btn: HTMLButtonElement, phase: "idle" | "confirm" | "busy"): void {
  btn.dataset.phase = phase;
  btn.classList.toggle("btn--danger-confirm", phase === "confirm");
  btn.textContent = phase === "idle" ? "Delete" : phase === "confirm" ? "Confirm delete" : "Deleting…";
  if (phase === "busy") btn.setAttribute("aria-disabled", "true");
  else btn.removeAttribute("aria-disabled");
}

export function summaryText(r: StatusReport): { text: string; ok: boolean } {
  const total = r.connectors.length;
  const n = r.need_attention;
  if (n > 0) return { text: `${n} ${n === 1 ? "needs" : "need"} attention, listed first`, ok: false };
  // Only connectors in use count: the gallery is an offer, never something to attend to.
  if (total === 0) return { text: "No connectors in use", ok: true };
  const allReady = r.connectors.every((c) => c.state === "ready" || c.state === "no_credential_required");
  if (allReady) return { text: total === 1 ? "The one connector is ready" : `All ${total} connectors ready`, ok: true };
  return { text: "Everything looks good", ok: true };
}

function describeSource(s: CatalogSource): string {
  if (s.error) return `${s.kind}, unreadable`;
  if (!s.present) return `${s.kind}, none yet`;
  return `${s.kind}, ${s.entries} ${s.entries === 1 ? "entry" : "entries"}`;
}

export function buildSources(sources: CatalogSource[]): DocumentFragment {
  const frag = document.createDocumentFragment();
  if (sources.length === 0) {
    frag.append("No catalog files");
    return frag;
  }
  for (const s of sources) {
    const item = el("span", `source${s.error ? " source--error" : ""}${s.present ? "" : " source--absent"}`);
    item.dataset.kind = s.kind;
    const path = el("span", "source__path", s.path);
    path.title = s.path;
    item.append(path, el("span", "source__info", ` (${describeSource(s)})`));
    frag.append(item);
  }
  return frag;
}

export function buildBanners(r: StatusReport): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const s of r.catalog.sources) {
    if (!s.error) continue;
    const b = el("div", "banner banner--error");
    b.dataset.banner = "catalog-error";
    b.append(icon("warning", "icon banner__icon"));
    const body = el("div", "banner__body");
    const title = el("p", "banner__title");
    title.append("Catalog file could not be read: ", el("span", "banner__path", s.path));
    body.append(title, el("pre", "banner__message", s.error));
    b.append(body);
    out.push(b);
  }
  for (const error of r.client_errors ?? []) {
    // A client's config that could not be read: its servers are missing from the list.
    const b = el("div", "banner banner--warning");
    b.dataset.banner = "client-config";
    b.append(icon("warning", "icon banner__icon"));
    const body = el("div", "banner__body");
    body.append(
      el("p", "banner__title", "A client's MCP config could not be read"),
      el("pre", "banner__message", error),
    );
    b.append(body);
    out.push(b);
  }
  if (!r.secret_store.reachable) {
    const b = el("div", "banner banner--warning");
    b.dataset.banner = "secret-store";
    b.append(icon("secret_store_unreachable", "icon banner__icon"));
    const body = el("div", "banner__body");
    body.append(
      el("p", "banner__title", "The secret store did not answer"),
      el("p", "banner__text", "Stored credentials could not be checked. They are not reported as missing."),
    );
    if (r.secret_store.message) body.append(el("pre", "banner__message", r.secret_store.message));
    b.append(body);
    out.push(b);
  }
  return out;
}
