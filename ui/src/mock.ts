// The browser-only backend: serves ui/src/fixtures/<name>.json (`?fixture=<name>`, default
// `mixed`) and exposes `window.__patchbayMock` so tests can push reports and inspect calls.
//
// Query parameters:
//   fixture=<name>     which fixture to serve
//   fail=get_status    the first get_status rejects (to show the error state and Retry)
//   fail=refresh_connector / fail=disconnect_connector
//                      every Refresh now / Disconnect rejects (comma-separate to combine)
//   now=<iso>|real     the clock; default: the fixture's generated_at (stable screenshots)
//   start=receiver|paste_back|port_taken
//                      what start_authorization answers (default receiver)
//
// add_to_runtime succeeds by default: the connector gets a bridge to that runtime.
// complete_authorization succeeds by default: the connector turns ready in the report it
// answers (and emits). refresh_connector succeeds by default for a credential with a refresh
// token: a `refreshed` entry heads its refresh_history and it expires an hour from now (a
// credential without one is left as it is, as the refresher skips it). disconnect_connector
// removes the credential: the connector needs authorization, its bridges and history cleared.
// Script other results with `nextResult` / `failNext`.

import { now, setClock } from "./clock";
import type { Backend } from "./backend";
import type { BackendError, Connector, RefreshEntry, StartedFlow, StatusReport } from "./types";

const fixtures = import.meta.glob<StatusReport>("./fixtures/*.json", { import: "default" });

type Handler = (args: Record<string, unknown>) => unknown;

export interface PatchbayMock {
  calls: { cmd: string; args: Record<string, unknown> }[];
  report: StatusReport | null;
  emitStatus(report: StatusReport): void;
  focusConnector(name: string): void;
  /** What the tray or a patchbay://authorize/NAME link sends the window. */
  authorizeConnector(name: string): void;
  /** The next call of `cmd` rejects with `error`. */
  failNext(cmd: string, error: BackendError | string): void;
  /** The next call of `cmd` resolves with `value` (e.g. a StartedFlow, or a report). */
  nextResult(cmd: string, value: unknown): void;
  /** A StartedFlow as the real backend answers it, for `connector` and `completion`. */
  startedFlow(connector: string, completion?: "receiver" | "paste_back" | "port_taken"): StartedFlow;
  /** Replace a command's behaviour; the handler's return value (or throw) is the result. */
  setHandler(cmd: string, handler: Handler | null): void;
  setNow(iso: string | number): void;
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

  const nowParam = params.get("now");
  if (nowParam !== "real") {
    let fixed = Date.parse(nowParam ?? report.generated_at);
    if (Number.isNaN(fixed)) fixed = Date.now();
    setClock(() => fixed);
  }

  const statusListeners = new Set<(r: StatusReport) => void>();
  const focusListeners = new Set<(n: string) => void>();
  const authorizeListeners = new Set<(n: string) => void>();
  const failures = new Map<string, (BackendError | string)[]>();
  const results = new Map<string, unknown[]>();
  const handlers = new Map<string, Handler>();
  // Commands that reject on every call (`fail=refresh_connector`).
  const always = new Map<string, BackendError>();
  const failing = new Set((params.get("fail") ?? "").split(",").filter(Boolean));
  if (failing.has("get_status")) {
    failures.set("get_status", [
      { kind: "data_dir_unreadable", message: "Could not read /home/me/.local/share/patchbay: Permission denied (os error 13)" },
    ]);
  }
  const storeDown = "The secret store did not answer: org.freedesktop.secrets was not provided by any .service files";
  if (failing.has("refresh_connector")) always.set("refresh_connector", { kind: "secret_store", message: storeDown });
  if (failing.has("disconnect_connector")) always.set("disconnect_connector", { kind: "secret_store", message: storeDown });

  const mock: PatchbayMock = {
    calls: [],
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
    fixtureNames: Object.keys(fixtures).map((k) => k.replace(/^.*\/(.*)\.json$/, "$1")),
  };
  window.__patchbayMock = mock;

  async function call<T>(cmd: string, args: Record<string, unknown>, fallback: () => T): Promise<T> {
    mock.calls.push({ cmd, args: clone(args) });
    await new Promise((r) => setTimeout(r, 0));
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

  return {
    getStatus: () => call("get_status", {}, () => clone(report)),
    deleteUnclaimedCredential: (credentialKey) =>
      call("delete_unclaimed_credential", { credentialKey }, () => {
        report = { ...report, unclaimed: report.unclaimed.filter((u) => u.credential_key !== credentialKey) };
        return clone(report);
      }),
    startAuthorization: (name) =>
      call("start_authorization", { name }, () => startedFlow(name, params.get("start") ?? "receiver")),
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
        if (!c?.credential) throw { kind: "invalid", message: `no stored credential for the connector ${name}` };
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
        if (!c?.credential) throw { kind: "invalid", message: `no stored credential for the connector ${name}` };
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
    onStatusChanged: async (cb) => {
      statusListeners.add(cb);
      return () => statusListeners.delete(cb);
    },
    onFocusConnector: async (cb) => {
      focusListeners.add(cb);
      return () => focusListeners.delete(cb);
    },
    onAuthorizeConnector: async (cb) => {
      authorizeListeners.add(cb);
      return () => authorizeListeners.delete(cb);
    },
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
