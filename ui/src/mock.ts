// The browser-only backend: serves ui/src/fixtures/<name>.json (`?fixture=<name>`, default
// `mixed`) and exposes `window.__patchbayMock` so tests can push reports and inspect calls.
//
// Query parameters:
//   fixture=<name>     which fixture to serve
//   fail=get_status    the first get_status rejects (to show the error state and Retry)
//   fail=refresh_connector / fail=disconnect_connector
//                      every Refresh now / Disconnect rejects (comma-separate to combine)
//   now=<iso>|real     the clock; default: the fixture's generated_at (stable screenshots)
//   start=receiver|paste_back|port_taken|client_needed
//                      what start_authorization answers (default receiver); client_needed
//                      rejects as a provider with no way to register does, until enter_client
//                      was called for that connector (then it starts with the receiver)
//   health=<name>      which health board to serve (ui/src/fixtures/health/<name>.json; default:
//                      the fixture's name, else an empty board: nothing checked yet)
//   checkfail=<names>|all
//                      the Test of these connectors (comma-separated) fails: nothing answers
//   fail=check_connector / fail=get_health_board / fail=write_back_transport
//                      every call of that command rejects (the health file is unreadable)
//
// add_to_runtime succeeds by default: the connector gets a bridge to that runtime.
// complete_authorization succeeds by default: the connector turns ready in the report it
// answers (and emits). refresh_connector succeeds by default for a credential with a refresh
// token: a `refreshed` entry heads its refresh_history and it expires an hour from now (a
// credential without one is left as it is, as the refresher skips it). disconnect_connector
// removes the credential: the connector needs authorization, its bridges and history cleared.
// check_connector answers what the connector's state suggests (ready rows answer with the
// board's latency and tools; needs_authorization/needs_reauth a 401 with action authorize;
// missing_configuration and secret_store_unreachable are skipped), overridden per connector by
// ui/src/fixtures/checks/<fixture>.json (mixed: deepwiki falls back to SSE and offers the
// write-back, stripe is rejected on both transports, sentry is skipped), and records the result
// on the board as the backend does (three failures in a row, or one terminal failure, degrade).
// write_back_transport sets the connector's transport. Script other results with `nextResult` /
// `failNext`; `emitHealthChanged()` sends `health-changed`.
//
// The gallery (issue 11): enable_connector moves a gallery entry into the connectors, in the
// state its `needs` implies (oauth: needs authorization; secret: missing configuration with its
// variables; nothing: no credential required), in use because "enabled". disable_connector moves
// a connector back into the gallery as `disabled: true` (Hidden). manage_connector turns an
// `origin: "client"` connector into a user catalog one. `fail=enable_connector` (and the other
// two) makes every call reject.
//
// Other clients and the gateway (issue 12): ui/src/fixtures/clients/<fixture>.json holds the
// client targets, same-name entries that are not Patchbay's (`foreign`), the mcp-remote entries
// that can be switched and the gateway's clients (no file: no client found, nothing to switch,
// no gateway client). add_to_client writes: a foreign entry rejects with kind `conflict` unless
// `replace`; the first write to a file reports a backup; via gateway mints the gateway client
// named for the client (`cursor`) unless it has one; Claude Desktop via gateway is refused.
// switch_client_entry switches a candidate (refused when no connector has its URL) and drops it
// from switch_candidates. revoke_gateway_client removes the client. `clients=none`: no client is
// found. `fail=add_to_client|switch_client_entry|gateway_clients|revoke_gateway_client` (every
// call rejects).
//
// Start at login: get_launch_at_login answers the mock's setting (`launchAtLogin`, off unless
// `login=on`); set_launch_at_login sets it and answers it. `fail=get_launch_at_login` (the
// setting cannot be read: the switch says it is unavailable) and `fail=set_launch_at_login`
// (every change rejects: the switch goes back) reject with kind `launch_at_login`.
//
// Custom connectors (issue 21): add_custom_connector answers the report as it is unless a test
// scripts it; the call records each value's name, never the value.
//
// Keys (issue 21): set_connector_key and clear_connector_key answer the report as it is unless a
// test scripts the answer with `nextResult`; the calls record whether a value was given, never
// the value.
//
// Sign-in requests (the gateway's consents): `consents=CLIENT[:CONNECTOR],…` is what
// consent_requests answers (ids consent-1, consent-2, … in order); answer_consent removes the one
// it answers (kind `not_pending` for one not there) and answers the rest; `emitConsents(list)`
// sends consents-changed. `fail=answer_consent`: every answer rejects.
//
// The page as the app creates it: `boot=1` sets window.__patchbayBoot to the fixture's report and
// board (src-tauri/src/window.rs). `hold=get_status` (comma-separated commands): their calls wait
// until `release("get_status")`, so a test sees what the page draws before the answer.
//
// Row requests sent before the page listened: `queued=ask_to_authorize:notion,focus:slack`
// (REQUEST:NAME, comma-separated, in order) is what the first page_listening answers (later
// calls answer none, as the backend hands them over once).

import { now, setClock } from "./clock";
import type { Backend, ConsentRequest, QueuedRowRequest } from "./backend";
import type {
  BackendError,
  CheckErrorSummary,
  ClientTarget,
  ClientWrite,
  GatewayClients,
  SwitchCandidate,
  Connector,
  ConnectorCheck,
  GalleryEntry,
  HealthBoard,
  HealthRow,
  InUseReason,
  IpcError,
  RefreshEntry,
  StartedFlow,
  StatusReport,
  ToolInfo,
  TransportKind,
} from "./types";
import type { WritePreview, WriteUndone } from "./generated/ipc";

const fixtures = import.meta.glob<StatusReport>("./fixtures/*.json", { import: "default" });
const boards = import.meta.glob<HealthBoard>("./fixtures/health/*.json", { import: "default" });
const scriptedChecks = import.meta.glob<Record<string, Partial<ConnectorCheck>>>("./fixtures/checks/*.json", {
  import: "default",
});

/** ui/src/fixtures/clients/<fixture>.json */
interface ClientsFixture {
  targets: ClientTarget[];
  /** client id -> entry name -> what it is (`stdio: npx -y pkg`): same-name entries not Patchbay's. */
  foreign: Record<string, Record<string, string>>;
  candidates: SwitchCandidate[];
  gateway: GatewayClients;
}

const clientFixtures = import.meta.glob<ClientsFixture>("./fixtures/clients/*.json", { import: "default" });

const DEFAULT_TARGETS: ClientTarget[] = [
  { client: "cursor", display_name: "Cursor", found: false, http: true, file: "/home/me/.cursor/mcp.json" },
  { client: "vscode", display_name: "VS Code", found: false, http: true, file: "/home/me/.config/Code/User/mcp.json" },
  {
    client: "claude-desktop",
    display_name: "Claude Desktop",
    found: false,
    http: false,
    file: "/home/me/.config/Claude/claude_desktop_config.json",
  },
  { client: "windsurf", display_name: "Windsurf", found: false, http: true, file: "/home/me/.codeium/windsurf/mcp_config.json" },
];

type Handler = (args: Record<string, unknown>) => unknown;

export interface PatchbayMock {
  calls: { cmd: string; args: Record<string, unknown> }[];
  report: StatusReport | null;
  emitStatus(report: StatusReport): void;
  focusConnector(name: string): void;
  /** What the tray or a patchbay://authorize/NAME link sends the window. */
  authorizeConnector(name: string): void;
  askAuthorizeConnector(name: string): void;
  /** The next call of `cmd` rejects with `error`. */
  failNext(cmd: string, error: BackendError | string): void;
  /** The next call of `cmd` resolves with `value` (e.g. a StartedFlow, or a report). */
  nextResult(cmd: string, value: unknown): void;
  /** A StartedFlow as the real backend answers it, for `connector` and `completion`. */
  startedFlow(connector: string, completion?: "receiver" | "paste_back" | "port_taken"): StartedFlow;
  /** Replace a command's behaviour; the handler's return value (or throw) is the result. */
  setHandler(cmd: string, handler: Handler | null): void;
  setNow(iso: string | number): void;
  /** The health board get_health_board answers (kept up to date by check_connector). */
  board: HealthBoard;
  /** Sends `health-changed`, as the periodic check does after recording results. */
  emitHealthChanged(): void;
  /** Lets the held calls of `cmd` (`hold=`) answer, and later ones answer at once. */
  release(cmd: string): void;
  /** The sign-in requests consent_requests answers. */
  consents: ConsentRequest[];
  /** Sends consents-changed with `requests` (and keeps them), as the gateway does. */
  emitConsents(requests: ConsentRequest[]): void;
  /** Start at login as the mock keeps it (the login entry's presence). */
  launchAtLogin: boolean;
  fixtureNames: string[];
}

declare global {
  interface Window {
    __patchbayMock?: PatchbayMock;
  }
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

export async function createMockBackend(params: URLSearchParams): Promise<Backend> {
  const name = params.get("fixture") ?? "mixed";
  const load = fixtures[`./fixtures/${name}.json`];
  if (!load) throw { kind: "mock", message: `No fixture named "${name}" in ui/src/fixtures/.` };
  let report: StatusReport = clone(await load());
  const boardName = params.get("health") ?? name;
  const loadBoard = boards[`./fixtures/health/${boardName}.json`];
  if (params.has("health") && !loadBoard) throw { kind: "mock", message: `No health board named "${boardName}" in ui/src/fixtures/health/.` };
  let board: HealthBoard = loadBoard ? clone(await loadBoard()) : emptyBoard(report);
  const loadChecks = scriptedChecks[`./fixtures/checks/${name}.json`];
  const checkScripts: Record<string, Partial<ConnectorCheck>> = loadChecks ? clone(await loadChecks()) : {};
  const checkFail = new Set((params.get("checkfail") ?? "").split(",").filter(Boolean));

  const loadClients = clientFixtures[`./fixtures/clients/${name}.json`];
  const clients: ClientsFixture = loadClients
    ? clone(await loadClients())
    : {
        targets: clone(DEFAULT_TARGETS),
        foreign: {},
        candidates: [],
        gateway: { url: "http://127.0.0.1:3119/mcp", port: 3119, file: "/home/me/.local/share/patchbay/gateway-clients.json", clients: [] },
      };
  if (params.get("clients") === "none") for (const t of clients.targets) t.found = false;
  /** client id -> entry name -> "stdio" | "gateway": Patchbay's own entries written so far. */
  const ours = new Map<string, Map<string, string>>();
  const backedUp = new Set<string>();

  const nowParam = params.get("now");
  if (nowParam !== "real") {
    let fixed = Date.parse(nowParam ?? report.generated_at);
    if (Number.isNaN(fixed)) fixed = Date.now();
    setClock(() => fixed);
  }

  const statusListeners = new Set<(r: StatusReport) => void>();
  const focusListeners = new Set<(n: string) => void>();
  const authorizeListeners = new Set<(n: string) => void>();
  const askAuthorizeListeners = new Set<(n: string) => void>();
  const healthListeners = new Set<() => void>();
  const failures = new Map<string, (BackendError | string)[]>();
  // start=client_needed: the connectors asked for a client, and those a client was entered for.
  const asked = new Set<string>();
  const enteredClients = new Set<string>();
  const results = new Map<string, unknown[]>();
  const handlers = new Map<string, Handler>();
  // Commands that reject on every call (`fail=refresh_connector`).
  const always = new Map<string, BackendError>();
  const failing = new Set((params.get("fail") ?? "").split(",").filter(Boolean));
  if (failing.has("get_status")) {
    failures.set("get_status", [
      { kind: "secret_store", message: "Could not read /home/me/.local/share/patchbay: Permission denied (os error 13)" },
    ]);
  }
  const storeDown = "The secret store did not answer: org.freedesktop.secrets was not provided by any .service files";
  if (failing.has("refresh_connector")) always.set("refresh_connector", { kind: "secret_store", message: storeDown });
  if (failing.has("disconnect_connector")) always.set("disconnect_connector", { kind: "secret_store", message: storeDown });
  const healthDown = "cannot open the health board /home/me/.local/share/patchbay/health.sqlite: database is locked";
  for (const cmd of ["check_connector", "get_health_board"]) {
    if (failing.has(cmd)) always.set(cmd, { kind: "health_store", message: healthDown });
  }
  const catalogDown: BackendError = {
    kind: "catalog_write",
    message: "cannot write /home/me/.config/patchbay/mcp.json: Permission denied (os error 13); nothing was written",
  };
  for (const cmd of ["enable_connector", "disable_connector", "manage_connector"]) {
    if (failing.has(cmd)) always.set(cmd, catalogDown);
  }
  if (failing.has("add_to_client") || failing.has("switch_client_entry")) {
    const denied: BackendError = {
      kind: "client_config",
      message: "cannot write /home/me/.cursor/mcp.json: Permission denied (os error 13); nothing was changed",
    };
    for (const cmd of ["add_to_client", "switch_client_entry"]) if (failing.has(cmd)) always.set(cmd, denied);
  }
  for (const cmd of ["gateway_clients", "revoke_gateway_client"]) {
    if (failing.has(cmd)) {
      always.set(cmd, {
        kind: "gateway_clients",
        message: "/home/me/.local/share/patchbay/gateway-clients.json is not a gateway clients file: expected value at line 1 column 1",
      });
    }
  }
  if (failing.has("write_back_transport")) {
    always.set("write_back_transport", {
      kind: "catalog_write",
      message: "cannot write /home/me/.config/patchbay/mcp.json: it is not valid JSON (expected `,` or `}` at line 7 column 5); nothing was written",
    });
  }

  const entry = "/home/me/.config/autostart/Patchbay.desktop";
  if (failing.has("get_launch_at_login")) {
    always.set("get_launch_at_login", {
      kind: "launch_at_login",
      message: `cannot read ${entry}: Permission denied (os error 13)`,
    });
  }
  if (failing.has("set_launch_at_login")) {
    always.set("set_launch_at_login", {
      kind: "launch_at_login",
      message: `cannot write ${entry}: /home/me/.config is a file, not a directory`,
    });
  }

  if (failing.has("answer_consent")) {
    always.set("answer_consent", { kind: "internal", message: "Patchbay cannot draw a random number: getrandom failed" });
  }

  if (params.get("boot") === "1") window.__patchbayBoot = { report: clone(report), board: clone(board) };
  const holding = new Set((params.get("hold") ?? "").split(",").filter(Boolean));
  const held = new Map<string, (() => void)[]>();

  let queuedRows: QueuedRowRequest[] = (params.get("queued") ?? "")
    .split(",")
    .filter(Boolean)
    .map((item) => {
      const at = item.indexOf(":");
      return { request: item.slice(0, at) as QueuedRowRequest["request"], name: item.slice(at + 1) };
    });

  const consentListeners = new Set<(requests: ConsentRequest[]) => void>();
  const mock: PatchbayMock = {
    calls: [],
    consents: (params.get("consents") ?? "")
      .split(",")
      .filter(Boolean)
      .map((item, i) => {
        const [client, connector] = item.split(":");
        return { id: `consent-${i + 1}`, client_name: client, connector: connector ?? null, waiting_secs: 5 };
      }),
    emitConsents(requests) {
      mock.consents = clone(requests);
      for (const cb of consentListeners) cb(clone(requests));
    },
    launchAtLogin: params.get("login") === "on",
    get report() {
      return report;
    },
    set report(r) {
      if (r) report = r;
    },
    emitStatus(next) {
      report = clone(next);
      for (const cb of statusListeners) cb(clone(report));
    },
    focusConnector(n) {
      for (const cb of focusListeners) cb(n);
    },
    authorizeConnector(n) {
      for (const cb of authorizeListeners) cb(n);
    },
    askAuthorizeConnector(n) {
      for (const cb of askAuthorizeListeners) cb(n);
    },
    failNext(cmd, error) {
      const list = failures.get(cmd) ?? [];
      list.push(error);
      failures.set(cmd, list);
    },
    nextResult(cmd, value) {
      const list = results.get(cmd) ?? [];
      list.push(clone(value));
      results.set(cmd, list);
    },
    startedFlow: (connector, completion = "receiver") => startedFlow(connector, completion),
    setHandler(cmd, handler) {
      if (handler) handlers.set(cmd, handler);
      else handlers.delete(cmd);
    },
    setNow(t) {
      const fixed = typeof t === "number" ? t : Date.parse(t);
      setClock(() => fixed);
    },
    get board() {
      return board;
    },
    set board(b) {
      board = clone(b);
    },
    emitHealthChanged() {
      for (const cb of healthListeners) cb();
    },
    release(cmd) {
      holding.delete(cmd);
      for (const answer of held.get(cmd) ?? []) answer();
      held.delete(cmd);
    },
    fixtureNames: Object.keys(fixtures).map((k) => k.replace(/^.*\/(.*)\.json$/, "$1")),
  };
  window.__patchbayMock = mock;

  async function call<T>(cmd: string, args: Record<string, unknown>, fallback: () => T): Promise<T> {
    mock.calls.push({ cmd, args: clone(args) });
    await new Promise((r) => setTimeout(r, 0));
    if (holding.has(cmd)) await new Promise<void>((r) => held.set(cmd, [...(held.get(cmd) ?? []), r]));
    const queued = failures.get(cmd);
    if (queued && queued.length > 0) throw queued.shift();
    const broken = always.get(cmd);
    if (broken) throw clone(broken);
    const scripted = results.get(cmd);
    if (scripted && scripted.length > 0) return scripted.shift() as T;
    const h = handlers.get(cmd);
    if (h) return (await h(args)) as T;
    return fallback();
  }

  /** What Add does to the clients' fixture (the rules are the backend's; see client_entries.rs). */
  function writeAdd(client: string, connector: string, via: string, replace: boolean): ClientWrite {
    const target = clients.targets.find((t) => t.client === client);
    if (!target) throw { kind: "invalid_input", message: `unknown client "${client}"; expected one of cursor, vscode, claude-desktop, windsurf` };
    const c = report.connectors.find((x) => x.name === connector);
    if (!c) throw { kind: "unknown_connector", message: `no connector in use is named ${connector}` };
    if (c.transport === "stdio") {
      throw { kind: "refused", message: `${connector} is a local (stdio) server; Patchbay fronts remote servers only` };
    }
    if (via === "gateway" && !target.http) throw { kind: "refused", message: `${target.display_name} cannot use an HTTP server` };
    // An mcp-remote entry of that name is not Patchbay's either.
    const remote = clients.candidates.find((x) => x.client === client && x.entry === connector);
    const foreign = clients.foreign[client]?.[connector] ?? (remote ? `stdio: npx -y mcp-remote ${remote.url}` : undefined);
    if (foreign && !replace) {
      throw {
        kind: "conflict",
        message: `${target.file}: ${target.display_name} already has a server named "${connector}" that is not Patchbay's (${foreign}); nothing was changed (replace it to point it at Patchbay)`,
      };
    }
    const written = ours.get(client) ?? new Map<string, string>();
    ours.set(client, written);
    const change: ClientWrite["change"] = foreign ? "replaced" : written.get(connector) === via ? "unchanged" : written.has(connector) ? "replaced" : "added";
    if (foreign) delete clients.foreign[client]?.[connector];
    if (remote) clients.candidates = clients.candidates.filter((x) => x !== remote);
    written.set(connector, via);
    let backup: string | null = null;
    if (change !== "unchanged" && !backedUp.has(target.file)) {
      backedUp.add(target.file);
      backup = `${target.file}.patchbay-backup`;
    }
    let minted: string | null = null;
    if (via === "gateway" && !clients.gateway.clients.some((g) => g.label === client)) {
      clients.gateway.clients.push({ label: client, only: null, created_at: new Date(now()).toISOString() });
      minted = client;
    }
    const result: ClientWrite = {
      client,
      client_name: target.display_name,
      name: connector,
      connector,
      file: target.file,
      change,
      backup,
      via: via === "gateway" ? "gateway" : "stdio",
      gateway_client: minted,
      managed: false,
      undo_id: null,
      warning: null,
    };
    return result;
  }

  /** What Switch does to the clients' fixture. */
  function writeSwitch(client: string, server: string): ClientWrite {
    const target = clients.targets.find((t) => t.client === client);
    const candidate = clients.candidates.find((x) => x.client === client && x.entry === server);
    if (!target || !candidate) throw { kind: "client_config", message: `${target?.file ?? client}: ${target?.display_name ?? client} has no server named "${server}"` };
    if (!candidate.connector) {
      throw { kind: "unknown_connector", message: `no connector in use has the URL ${candidate.url} that "${server}" bridges` };
    }
    clients.candidates = clients.candidates.filter((x) => x !== candidate);
    const written = ours.get(client) ?? new Map<string, string>();
    ours.set(client, written);
    written.set(server, "stdio");
    let backup: string | null = null;
    if (!backedUp.has(target.file)) {
      backedUp.add(target.file);
      backup = `${target.file}.patchbay-backup`;
    }
    const result: ClientWrite = {
      client,
      client_name: target.display_name,
      name: server,
      connector: candidate.connector,
      file: target.file,
      change: "replaced",
      backup,
      via: "stdio",
      gateway_client: null,
      managed: false,
      undo_id: null,
      warning: null,
    };
    return result;
  }

  /** The clients' fixture as it is, to put back: a preview's dry run, an Undo. */
  function clientsSnapshot(): () => void {
    const kept = clone({ candidates: clients.candidates, foreign: clients.foreign, gateway: clients.gateway });
    const keptOurs = [...ours].map(([k, m]) => [k, new Map(m)] as const);
    const keptBackups = new Set(backedUp);
    return () => {
      Object.assign(clients, clone(kept));
      ours.clear();
      for (const [k, m] of keptOurs) ours.set(k, new Map(m));
      backedUp.clear();
      for (const f of keptBackups) backedUp.add(f);
    };
  }

  /** A write run on the fixture and taken back: its preview. The entry texts are made up here
   * (the fixture has no files); what is shown is the backend's (write.rs: preview_entry). */
  function dryRun(write: () => ClientWrite): WritePreview {
    const restore = clientsSnapshot();
    const entry = (name: string, value: unknown) => `"${name}": ${JSON.stringify(value, null, 2)}`;
    try {
      const w = write();
      restore();
      const remote = clients.candidates.find((x) => x.client === w.client && x.entry === w.name);
      const foreign = clients.foreign[w.client]?.[w.name];
      const ourVia = ours.get(w.client)?.get(w.name);
      const patchbay = (via: string | undefined, connector: string) =>
        via === "gateway"
          ? { url: `${clients.gateway.url}/${connector}`, headers: { Authorization: "[redacted]" } }
          : { command: "/usr/local/bin/patchbay", args: ["connect", connector] };
      const before = remote
        ? entry(w.name, { command: "npx", args: ["-y", "mcp-remote", remote.url] })
        : foreign
          ? entry(w.name, { command: foreign.replace(/^stdio: /, "") })
          : ourVia
            ? entry(w.name, patchbay(ourVia, w.connector))
            : null;
      return { client: w.client, client_name: w.client_name, name: w.name, connector: w.connector, file: w.file, before, after: entry(w.name, patchbay(w.via, w.connector)), change: w.change, via: w.via, warning: w.warning };
    } finally {
      restore();
    }
  }

  const undos = new Map<number, { restore: () => void; write: ClientWrite }>();
  /** A write whose Undo puts the fixture back as it was before it. */
  function undoable(write: () => ClientWrite): ClientWrite {
    const restore = clientsSnapshot();
    const w = write();
    if (w.change === "unchanged") return w;
    const id = undos.size + 1;
    undos.set(id, { restore, write: w });
    return { ...w, undo_id: id };
  }

  return {
    getStatus: () => call("get_status", {}, () => clone(report)),
    deleteUnclaimedCredential: (credentialKey) =>
      call("delete_unclaimed_credential", { credentialKey }, () => {
        report = { ...report, unclaimed: report.unclaimed.filter((u) => u.credential_key !== credentialKey) };
        return clone(report);
      }),
    startAuthorization: (name) =>
      call("start_authorization", { name }, () => {
        const start = params.get("start") ?? "receiver";
        if (start === "client_needed" && !enteredClients.has(name)) {
          asked.add(name);
          throw clientNeeded();
        }
        return startedFlow(name, start === "client_needed" ? "receiver" : start);
      }),
    enterClient: (name, clientId, clientSecret) =>
      call("enter_client", { name, clientId, secretGiven: clientSecret !== "" }, () => {
        if (!asked.has(name)) throw { kind: "invalid_input", message: `${name} has not asked for a client` };
        if (clientId.trim() === "") throw { kind: "invalid_input", message: "a client id is one line of text, not empty" };
        asked.delete(name);
        enteredClients.add(name);
        return startedFlow(name, "receiver");
      }),
    cancelAuthorization: (name) => call("cancel_authorization", { name }, () => clone(report)),
    reopenAuthorization: (name) => call("reopen_authorization", { name }, () => undefined),
    completeAuthorization: (name, pasted) =>
      call("complete_authorization", { name, pasted }, () => {
        report = {
          ...report,
          connectors: report.connectors.map((c) =>
            c.name === name
              ? { ...c, state: "ready" as const, label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null, detail: "Authorized." }
              : c,
          ),
        };
        report.need_attention = report.connectors.filter((c) => c.needs_attention).length;
        mock.emitStatus(report);
        return clone(report);
      }),
    addToRuntime: (name, runtime) =>
      call("add_to_runtime", { name, runtime }, () => {
        report = {
          ...report,
          connectors: report.connectors.map((c) =>
            c.name === name
              ? {
                  ...c,
                  can_add_to: (c.can_add_to ?? []).filter((r) => r !== runtime),
                  bridges: [
                    ...(c.bridges ?? []),
                    { runtime, server_name: name, credential_key: c.credential?.key ?? name, in_store: c.credential !== null },
                  ],
                }
              : c,
          ),
        };
        mock.emitStatus(report);
        return clone(report);
      }),
    refreshConnector: (name) =>
      call("refresh_connector", { name }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c?.credential) throw { kind: "no_credential", message: `no stored credential for the connector ${name}` };
        // The refresher skips a credential it has no refresh token for: nothing is recorded.
        if (!c.credential.has_refresh_token) return clone(report);
        const t = now();
        const expires = new Date(t + 60 * 60_000).toISOString();
        const entry: RefreshEntry = {
          at: new Date(t).toISOString(),
          outcome: "refreshed",
          http_status: 200,
          summary: `refreshed; valid until ${expires.slice(0, 16).replace("T", " ")} UTC`,
          detail: null,
          retries: 0,
        };
        const wasExpired = c.state === "token_expired";
        report = withConnectors(report, (x) =>
          x.name !== name
            ? x
            : {
                ...x,
                ...(wasExpired ? { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, detail: "Authorized; renews automatically." } : {}),
                credential: { ...c.credential!, expires_at: expires, updated_at: entry.at, last_rotated_by: null, last_rotated_at: null },
                refresh_history: [entry, ...(x.refresh_history ?? [])].slice(0, 10),
              },
        );
        mock.emitStatus(report);
        return clone(report);
      }),
    disconnectConnector: (name, forgetRegistration) =>
      call("disconnect_connector", { name, forgetRegistration }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c?.credential) throw { kind: "no_credential", message: `no stored credential for the connector ${name}` };
        report = withConnectors(report, (x) =>
          x.name !== name
            ? x
            : {
                ...x,
                state: "needs_authorization",
                label: "Needs authorization",
                severity: 60,
                needs_attention: true,
                blocks_start: true,
                action: "authorize",
                detail: `Authorize Patchbay with ${x.title || x.name}: click Authorize, or run \`patchbay authorize ${x.name}\`.`,
                credential: null,
                bridges: [],
                refresh_history: [],
              },
        );
        mock.emitStatus(report);
        return clone(report);
      }),
    checkConnector: (name) =>
      call("check_connector", { name }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c) throw { kind: "unknown_connector", message: `no connector named "${name}" in the catalog` };
        const row = board.connectors.find((r) => r.connector === name) ?? emptyRow(name, c.transport);
        if (!board.connectors.includes(row)) board.connectors.push(row);
        const fail = checkFail.has(name) || checkFail.has("all");
        const check = mockCheck(c, row, now(), fail ? null : (checkScripts[name] ?? null), fail);
        return clone(recordCheck(row, check));
      }),
    getHealthBoard: () =>
      call("get_health_board", {}, () => {
        // Every catalog connector, checked or not, by name.
        const rows = report.connectors.map(
          (c) => board.connectors.find((r) => r.connector === c.name) ?? emptyRow(c.name, c.transport),
        );
        rows.sort((a, b) => (a.connector < b.connector ? -1 : a.connector > b.connector ? 1 : 0));
        board = { generated_at: new Date(now()).toISOString(), connectors: rows };
        return clone(board);
      }),
    writeBackTransport: (name, transport) =>
      call("write_back_transport", { name, transport }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c) throw { kind: "unknown_connector", message: `no connector named "${name}" in the catalog` };
        if (transport !== "sse" && transport !== "streamable-http") {
          throw { kind: "invalid_input", message: `"${transport}" is not an HTTP transport; expected streamable-http or sse` };
        }
        if (c.transport === "stdio" || c.transport === "unknown") {
          throw { kind: "refused", message: `only a remote connector's HTTP transport can be written back; ${name} is ${c.transport}` };
        }
        report = withConnectors(report, (x) => (x.name === name ? { ...x, transport } : x));
        const row = board.connectors.find((r) => r.connector === name);
        if (row) row.transport = transport;
        mock.emitStatus(report);
        return clone(report);
      }),
    // No rule of the backend's here: a test scripts the report a key's save answers
    // (`nextResult`); by default the report is answered as it is.
    setConnectorKey: (name, variable, value) =>
      call("set_connector_key", { name, variable, valueGiven: value !== "" }, () => clone(report)),
    clearConnectorKey: (name, variable) => call("clear_connector_key", { name, variable }, () => clone(report)),
    // "Add custom connector": the same, and the call records each value's name and whether one
    // was given, never the value. probe_remote_url answers "unknown" unless a test scripts it.
    addCustomConnector: (spec) => {
      const values = spec.server.kind === "remote" ? spec.server.headers : spec.server.env;
      const where = spec.server.kind === "remote" ? { url: spec.server.url } : { command: spec.server.command, args: spec.server.args };
      const recorded = values.map((v) => ({ name: v.name, secret: v.secret, valueGiven: v.value !== "" }));
      return call("add_custom_connector", { name: spec.name, kind: spec.server.kind, ...where, values: recorded }, () => clone(report));
    },
    probeRemoteUrl: (url) => call("probe_remote_url", { url }, () => ({ kind: "unknown" as const, detail: "the mock does not probe" })),
    enableConnector: (name) =>
      call("enable_connector", { name }, () => {
        const entry = (report.gallery ?? []).find((g) => g.name === name);
        if (!entry) throw { kind: "unknown_connector", message: `no catalog entry named "${name}" to enable` };
        const user = userCatalog(report);
        report = withConnectors(
          {
            ...report,
            gallery: (report.gallery ?? []).filter((g) => g.name !== name),
            connectors: [...report.connectors, fromGallery(entry, user)],
          },
          (c) => c,
        );
        mock.emitStatus(report);
        return clone(report);
      }),
    disableConnector: (name) =>
      call("disable_connector", { name }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c) throw { kind: "unknown_connector", message: `no connector named "${name}" in use` };
        const gallery = [...(report.gallery ?? []).filter((g) => g.name !== name), toGallery(c)];
        gallery.sort((a, b) => a.title.localeCompare(b.title, "en", { sensitivity: "base" }));
        report = { ...report, gallery, connectors: report.connectors.filter((x) => x.name !== name) };
        report = withConnectors(report, (x) => x);
        mock.emitStatus(report);
        return clone(report);
      }),
    manageConnector: (name) =>
      call("manage_connector", { name }, () => {
        const c = report.connectors.find((x) => x.name === name);
        if (!c) throw { kind: "unknown_connector", message: `no connector named "${name}" in use` };
        if (c.origin !== "client") throw { kind: "refused", message: `${name} is already in a catalog` };
        const user = userCatalog(report);
        report = withConnectors(report, (x) =>
          x.name !== name
            ? x
            : {
                ...x,
                origin: "catalog",
                source: user,
                in_use_because: [...new Set<InUseReason>([...x.in_use_because, "user_catalog"])],
              },
        );
        mock.emitStatus(report);
        return clone(report);
      }),
    clientTargets: () => call("client_targets", {}, () => clone(clients.targets)),
    addToClient: (client, connector, via, replace) =>
      call("add_to_client", { client, name: connector, via, replace }, () => undoable(() => writeAdd(client, connector, via, replace))),
    previewAddToClient: (client, connector, via, replace) =>
      call("preview_add_to_client", { client, name: connector, via, replace }, () => dryRun(() => writeAdd(client, connector, via, replace))),
    switchClientEntry: (client, server) => call("switch_client_entry", { client, server }, () => undoable(() => writeSwitch(client, server))),
    previewSwitchClientEntry: (client, server) =>
      call("preview_switch_client_entry", { client, server }, () => dryRun(() => writeSwitch(client, server))),
    undoClientWrite: (id) =>
      call("undo_client_write", { id }, () => {
        const kept = undos.get(id);
        if (!kept) throw { kind: "invalid_input", message: "that change can no longer be undone (undone already, or older than the last 16 changes)" };
        undos.delete(id);
        kept.restore();
        const w = kept.write;
        const result: WriteUndone = { client: w.client, client_name: w.client_name, file: w.file, revoked: w.gateway_client };
        return result;
      }),
    switchCandidates: () => call("switch_candidates", {}, () => clone(clients.candidates)),
    gatewayClients: () => call("gateway_clients", {}, () => clone(clients.gateway)),
    revokeGatewayClient: (label) =>
      call("revoke_gateway_client", { label }, () => {
        if (!clients.gateway.clients.some((g) => g.label === label)) {
          throw { kind: "gateway_clients", message: `no gateway client is labelled "${label}"` };
        }
        clients.gateway.clients = clients.gateway.clients.filter((g) => g.label !== label);
        return clone(clients.gateway);
      }),
    consentRequests: () => call("consent_requests", {}, () => clone(mock.consents)),
    answerConsent: (id, allow) =>
      call("answer_consent", { id, allow }, () => {
        if (!mock.consents.some((c) => c.id === id)) {
          throw { kind: "not_pending", message: "this request was answered already or has expired" };
        }
        mock.consents = mock.consents.filter((c) => c.id !== id);
        return clone(mock.consents);
      }),
    onConsentsChanged: async (cb) => {
      consentListeners.add(cb);
      return () => consentListeners.delete(cb);
    },
    getLaunchAtLogin: () => call("get_launch_at_login", {}, () => mock.launchAtLogin),
    setLaunchAtLogin: (enabled) =>
      call("set_launch_at_login", { enabled }, () => {
        mock.launchAtLogin = enabled;
        return mock.launchAtLogin;
      }),
    onStatusChanged: async (cb) => {
      statusListeners.add(cb);
      return () => statusListeners.delete(cb);
    },
    onHealthChanged: async (cb) => {
      healthListeners.add(cb);
      return () => healthListeners.delete(cb);
    },
    onFocusConnector: async (cb) => {
      focusListeners.add(cb);
      return () => focusListeners.delete(cb);
    },
    onAuthorizeConnector: async (cb) => {
      authorizeListeners.add(cb);
      return () => authorizeListeners.delete(cb);
    },
    onAskAuthorizeConnector: async (cb) => {
      askAuthorizeListeners.add(cb);
      return () => askAuthorizeListeners.delete(cb);
    },
    pageListening: () =>
      call("page_listening", {}, () => {
        // As the backend does, requests are events from now on: a page that had not registered
        // its listeners yet would lose them, so that is refused here (tests see it).
        if (focusListeners.size === 0 || authorizeListeners.size === 0 || askAuthorizeListeners.size === 0) {
          throw { kind: "error", message: "page_listening before the page listens for row requests" };
        }
        const handed = queuedRows;
        queuedRows = [];
        return handed;
      }),
  };
}

/** `report` with each connector mapped, re-sorted (worst first, then by name) and recounted. */
function withConnectors(report: StatusReport, fn: (c: Connector) => Connector): StatusReport {
  const connectors = report.connectors
    .map(fn)
    .sort((a, b) => b.severity - a.severity || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    ...report,
    connectors,
    need_attention: connectors.filter((c) => c.needs_attention).length,
    worst: connectors[0]?.state ?? null,
  };
}

function userCatalog(report: StatusReport): string {
  return report.catalog.sources.find((s) => s.kind === "user")?.path ?? "/home/me/.config/patchbay/mcp.json";
}

/** The connector an enabled gallery entry becomes, in the state its `needs` implies. */
function fromGallery(g: GalleryEntry, source: string): Connector {
  const common = {
    name: g.name,
    title: g.title,
    description: g.description,
    transport: g.transport,
    url: g.url,
    unavailable_reason: null,
    one_shot: false,
    one_shot_note: null,
    credential: null,
    source,
    bridges: [],
    can_add_to: [],
    refresh_history: [],
    degraded: null,
    in_use_because: ["enabled", "user_catalog"] as InUseReason[],
    found_in: [],
    origin: "catalog" as const,
    credential_source: null,
  };
  if (g.needs === "oauth") {
    return {
      ...common,
      state: "needs_authorization",
      label: "Needs authorization",
      severity: 60,
      needs_attention: true,
      blocks_start: true,
      detail: `Authorize Patchbay with ${g.title}: click Authorize, or run \`patchbay authorize ${g.name}\`.`,
      action: "authorize",
      missing_variables: [],
      variables: [],
    };
  }
  if (g.needs === "secret") {
    return {
      ...common,
      state: "missing_configuration",
      label: "Missing configuration",
      severity: 50,
      needs_attention: true,
      blocks_start: true,
      detail: `Set ${g.variables.map((v) => `\`${v}\``).join(", ")}: run \`patchbay secret set ${g.variables[0] ?? "NAME"}\`.`,
      action: "set_variable",
      missing_variables: g.variables.map((v) => ({ name: v, field: g.transport === "stdio" ? `env.${v}` : "headers" })),
      variables: g.variables.map((v) => ({ name: v, field: g.transport === "stdio" ? `env.${v}` : "headers", source: "missing" as const })),
    };
  }
  return {
    ...common,
    state: "no_credential_required",
    label: "No credential required",
    severity: 0,
    needs_attention: false,
    blocks_start: false,
    detail: g.transport === "stdio" ? "Runs locally and needs no credential." : "Needs no credential.",
    action: null,
    missing_variables: [],
    variables: [],
  };
}

/** The hidden gallery entry a disabled connector becomes. */
function toGallery(c: Connector): GalleryEntry {
  const variables = c.missing_variables.map((v) => v.name);
  const needs = variables.length > 0 ? "secret" : c.credential || authorizeLike(c) ? "oauth" : "nothing";
  return {
    name: c.name,
    title: c.title || c.name,
    description: c.description,
    transport: c.transport,
    url: c.url,
    needs,
    variables,
    disabled: true,
  };
}

function authorizeLike(c: Connector): boolean {
  return c.action === "authorize" || c.action === "reauthorize";
}

/** What start_authorization rejects with where nothing registers Patchbay. */
function clientNeeded(): IpcError {
  const issuer = "https://auth.example.com";
  const redirect_uri = "http://127.0.0.1:3118/callback";
  return {
    kind: "client_needed",
    message: `${issuer} offers no way to register Patchbay. Create an OAuth client there (a public client, with the redirect URI ${redirect_uri}), then enter its client id here.`,
    needs_client: { issuer, redirect_uri },
  };
}

function startedFlow(connector: string, completion: string): StartedFlow {
  const url = `https://auth.example.com/authorize?response_type=code&client_id=patchbay-${connector}&state=st4te&code_challenge=abc&code_challenge_method=S256`;
  const expires_at = new Date(Date.parse("2026-11-30T09:10:00Z")).toISOString();
  if (completion === "paste_back") {
    return {
      connector,
      authorize_url: url,
      completion: "paste_back",
      redirect_uri: "https://app.example.com/oauth/callback",
      why: "the client's registered redirect is https://app.example.com/oauth/callback, not Patchbay's receiver",
      notice: null,
      expires_at,
    };
  }
  if (completion === "port_taken") {
    const why = "port 3118 on 127.0.0.1 is in use by another program (node, pid 4242), so the browser cannot come back to Patchbay";
    return {
      connector,
      authorize_url: url,
      completion: "paste_back",
      redirect_uri: "http://127.0.0.1:3118/callback",
      why,
      notice: why,
      expires_at,
    };
  }
  return { connector, authorize_url: url, completion: "receiver", redirect_uri: "http://127.0.0.1:3118/callback", notice: null, expires_at };
}

// ---- connection checks --------------------------------------------------------------------

function emptyRow(connector: string, transport: string): HealthRow {
  return {
    connector,
    transport,
    calls: 0,
    failures: 0,
    fail_rate: 0,
    p50_ms: null,
    p95_ms: null,
    last_error: null,
    last_error_at: null,
    last_ok_at: null,
    last_check_at: null,
    recent_errors: [],
    degraded: null,
    consecutive_failures: 0,
    next_check_at: null,
    tools: null,
  };
}

function emptyBoard(report: StatusReport): HealthBoard {
  return {
    generated_at: report.generated_at,
    connectors: report.connectors
      .map((c) => emptyRow(c.name, c.transport))
      .sort((a, b) => (a.connector < b.connector ? -1 : 1)),
  };
}

function statsOf(row: HealthRow): ConnectorCheck["health"] {
  const { transport: _t, degraded: _d, consecutive_failures: _c, next_check_at: _n, tools: _tools, ...stats } = row;
  return clone(stats);
}

function kindOf(transport: string): TransportKind | null {
  return transport === "stdio" || transport === "sse" || transport === "streamable-http" ? transport : null;
}

/** What the real check would answer for `c`, before it is recorded. */
function mockCheck(
  c: Connector,
  row: HealthRow,
  t: number,
  script: Partial<ConnectorCheck> | null,
  unreachable: boolean,
): ConnectorCheck {
  const configured = kindOf(c.transport);
  const base: ConnectorCheck = {
    connector: c.name,
    checked_at: new Date(t).toISOString(),
    ok: false,
    skipped: null,
    configured_transport: configured,
    transport: configured,
    fell_back_to: null,
    write_back: null,
    latency_ms: null,
    server: null,
    tools: [],
    error: null,
    advice: null,
    action: null,
    attempts: [],
    transition: null,
    degraded: null,
    consecutive_failures: 0,
    health: statsOf(row),
  };
  const failed = (error: CheckErrorSummary, advice: string, action: ConnectorCheck["action"] = null, elapsed = 12): ConnectorCheck => ({
    ...base,
    error,
    advice,
    action,
    attempts: configured ? [{ transport: configured, ok: false, elapsed_ms: elapsed, error, retry: 0, waited_ms: 0 }] : [],
  });
  const skipped = (reason: string, advice: string, action: ConnectorCheck["action"] = null): ConnectorCheck => ({
    ...base,
    skipped: reason,
    transport: null,
    advice,
    action,
  });
  if (unreachable) {
    if (configured === "stdio") {
      return failed(
        { kind: "exited", message: "the server process exited with status 1 before the handshake finished; it said: Error: ENOENT: no such file or directory, stat '/home/me/src'", retryable: true, http_status: null },
        "The server process exited during the handshake; its last words are in the error.",
      );
    }
    return failed(
      { kind: "unreachable", message: `cannot reach the server over ${configured}: Connection refused (os error 111)`, retryable: true, http_status: null },
      `Nothing answered at ${c.url ?? ""}; is the server up, and the URL right?`,
    );
  }
  if (script) return { ...base, ...clone(script), health: base.health };
  switch (c.state) {
    case "missing_configuration": {
      const names = c.missing_variables.map((v) => v.name).join(", ");
      const reason = `missing configuration (${names} has no value)`;
      return skipped(reason, `Nothing was contacted: ${reason}. Store it with \`patchbay secret set NAME\`, or set it in the environment.`, "set_variable");
    }
    case "secret_store_unreachable": {
      const reason = "the stored credential cannot be read (the secret store did not answer)";
      return skipped(reason, `Nothing was contacted: ${reason}.`);
    }
    case "needs_authorization":
    case "needs_reauth": {
      const message =
        c.credential === null
          ? `the server answered 401 over ${configured}: it needs authorization, and no credential is stored`
          : `the server answered 401 over ${configured}: it refused the stored token (expired or revoked), so it needs authorizing again`;
      return failed(
        { kind: "needs_authorization", message, retryable: false, http_status: 401 },
        `Authorize it: \`patchbay authorize ${c.name}\` or its Authorize button.`,
        "authorize",
        140,
      );
    }
    default: {
      const latency = row.p50_ms ?? 42;
      const tools: ToolInfo[] = row.tools?.tools ?? [
        { name: `${c.name}.search`, tool: "search", title: "Search", description: `Search ${c.title || c.name}.` },
        { name: `${c.name}.fetch`, tool: "fetch", title: null, description: "Fetch one item by its id." },
      ];
      return {
        ...base,
        ok: true,
        latency_ms: latency,
        server: { name: `${c.name}-mcp`, version: "1.4.2", protocol_version: "2025-06-18" },
        tools: clone(tools),
        attempts: configured ? [{ transport: configured, ok: true, elapsed_ms: latency + 1, error: null, retry: 0, waited_ms: 0 }] : [],
      };
    }
  }
}

/** Records `check` on `row` as the health store does, and answers the check with the result. */
function recordCheck(row: HealthRow, check: ConnectorCheck): ConnectorCheck {
  if (check.skipped !== null) {
    return { ...check, degraded: row.degraded, consecutive_failures: row.consecutive_failures, health: statsOf(row) };
  }
  const at = check.checked_at;
  row.calls += 1;
  row.last_check_at = at;
  if (check.ok) {
    const latency = check.latency_ms ?? 0;
    row.p50_ms = row.p50_ms === null ? latency : Math.round((row.p50_ms * 3 + latency) / 4);
    row.p95_ms = row.p95_ms === null ? latency : Math.max(row.p95_ms, latency);
    row.last_ok_at = at;
    check.transition = row.consecutive_failures > 0 || row.degraded ? "recovered" : "healthy";
    row.degraded = null;
    row.consecutive_failures = 0;
    row.next_check_at = null;
    // The board names a row's transport as text; a check, by kind.
    row.tools = { checked_at: at, transport: check.transport ?? (row.transport as TransportKind), tools: clone(check.tools) };
  } else {
    const error = check.error!;
    row.failures += 1;
    row.last_error = error.message;
    row.last_error_at = at;
    const wasDegraded = row.degraded !== null;
    // As the backend's rule: a server that wants authorizing is recorded, never counted.
    const counted = error.kind !== "needs_authorization";
    if (counted) {
      row.consecutive_failures =
        error.retryable || wasDegraded ? row.consecutive_failures + 1 : Math.max(row.consecutive_failures + 1, 3);
    }
    if (!counted) {
      check.transition = "not_counted";
    } else if (wasDegraded) {
      check.transition = "still_degraded";
      row.degraded = { since: row.degraded!.since, error: error.message, kind: error.kind };
    } else if (row.consecutive_failures >= 3) {
      check.transition = "degraded";
      row.degraded = { since: at, error: error.message, kind: error.kind };
    } else {
      check.transition = "counted";
    }
    if (counted) row.next_check_at = new Date(Date.parse(at) + (row.degraded ? 120 : 30) * 1000).toISOString();
    row.recent_errors = [
      {
        at,
        ok: false,
        latency_ms: check.attempts.reduce((n, a) => n + a.elapsed_ms, 0),
        transport: check.transport ?? (row.transport as TransportKind),
        error_kind: error.kind,
        http_status: error.http_status,
        error: error.message,
        streak: row.consecutive_failures,
      },
      ...row.recent_errors,
    ].slice(0, 10);
  }
  row.fail_rate = row.calls > 0 ? row.failures / row.calls : 0;
  return { ...check, degraded: clone(row.degraded), consecutive_failures: row.consecutive_failures, health: statsOf(row) };
}
