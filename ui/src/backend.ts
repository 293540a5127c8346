// The seam between the window and Patchbay. Inside Tauri it uses invoke/listen; in a plain
// browser (tests, `npm run dev`) it loads the mock backend, which serves a fixture.

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type {
  BackendError,
  ErrorKind,
  ClientTarget,
  ClientWrite,
  ConnectorCheck,
  GatewayClients,
  HealthBoard,
  IpcError,
  StartedFlow,
  StatusReport,
  SwitchCandidate,
} from "./types";
import type { ConsentRequest, CustomConnector, PageBoot, QueuedRowRequest, RemoteAuth, WritePreview, WriteUndone } from "./generated/ipc";

export type { ConsentRequest, PageBoot, QueuedRowRequest };

export interface Backend {
  getStatus(): Promise<StatusReport>;
  deleteUnclaimedCredential(credentialKey: string): Promise<StatusReport>;
  /** Starts the OAuth flow (Patchbay opens the browser). Rejects with a BackendError. */
  startAuthorization(name: string): Promise<StartedFlow>;
  /** Cancels authorizing `name` (its pending flows end, the receiver stops); answers the new report. */
  cancelAuthorization(name: string): Promise<StatusReport>;
  /** Opens the consent page of `name`'s pending authorization again in the system browser. */
  reopenAuthorization(name: string): Promise<void>;
  /** Finishes a paste-back flow from the pasted address or code; answers the new report. */
  completeAuthorization(name: string, pasted: string): Promise<StatusReport>;
  /**
   * After `startAuthorization` rejected with kind `client_needed`: keeps the client the user made
   * at the provider (an empty secret: a public client) and starts authorizing with it.
   */
  enterClient(name: string, clientId: string, clientSecret: string): Promise<StartedFlow>;
  /** Stores a `${VARIABLE}` the connector's entry uses in the vault; answers the new report. */
  setConnectorKey(name: string, variable: string, value: string): Promise<StatusReport>;
  /** Removes a `${VARIABLE}` the connector's entry uses from the vault; answers the new report. */
  clearConnectorKey(name: string, variable: string): Promise<StatusReport>;
  /** "Add to Claude Code" / "Add to Codex"; answers the new report. Rejects with a BackendError. */
  addToRuntime(name: string, runtime: string): Promise<StatusReport>;
  /**
   * "Refresh now": refreshes the stored credential at once (or adopts a runtime's newer pair);
   * answers the new report, whose `refresh_history` tells how it went. Rejects with a
   * BackendError only when nothing could be attempted (no stored credential, the store failed).
   */
  refreshConnector(name: string): Promise<StatusReport>;
  /**
   * "Disconnect": revokes at the server where it can, removes the credential from the vault and
   * every runtime, and forgets the app's client registration when asked; answers the new report.
   */
  disconnectConnector(name: string, forgetRegistration: boolean): Promise<StatusReport>;
  /**
   * "Test": a real MCP handshake (initialize + tools/list) with the stored credential, falling
   * back to the other HTTP transport when the configured one is rejected; recorded on the health
   * board. Can take up to ~15 s (a stdio server is started). A server that fails is an answer
   * with `ok: false`; rejects (BackendError) only for an unknown connector or a broken health file.
   */
  checkConnector(name: string): Promise<ConnectorCheck>;
  /** Every catalog connector's check history: calls, failure rate, p50/p95, errors, tools. */
  getHealthBoard(): Promise<HealthBoard>;
  /** Saves the transport a check fell back to (`sse`, `streamable-http`) to the user catalog. */
  writeBackTransport(name: string, transport: string): Promise<StatusReport>;
  /** "Add" in the gallery: puts a catalog entry in use (`"enabled": true` in the user catalog). */
  enableConnector(name: string): Promise<StatusReport>;
  /** "Add custom connector": the form's server into the user catalog, in use; answers the new report. */
  addCustomConnector(spec: CustomConnector): Promise<StatusReport>;
  /** One request to `url`: does it want OAuth? */
  probeRemoteUrl(url: string): Promise<RemoteAuth>;
  /** "Remove from my connectors": writes `"enabled": false` for it into the user catalog. */
  disableConnector(name: string): Promise<StatusReport>;
  /** "Manage with Patchbay": copies a client-only connector into the user catalog (secrets to the vault). */
  manageConnector(name: string): Promise<StatusReport>;
  /** The clients "Add to" writes, and whether each is on this machine. */
  clientTargets(): Promise<ClientTarget[]>;
  /**
   * "Add to CLIENT": the connector into that client's config, via `stdio` (`patchbay connect`)
   * or `gateway` (a minted client secret). A same-name entry that is not Patchbay's rejects with
   * kind `conflict` unless `replace`.
   */
  addToClient(client: string, name: string, via: string, replace: boolean): Promise<ClientWrite>;
  /** "Switch CLIENT to Patchbay": its `npx mcp-remote URL` entry runs `patchbay connect` instead. */
  switchClientEntry(client: string, server: string): Promise<ClientWrite>;
  /** What `addToClient` would write: the entry before and after (no secret); writes nothing. */
  previewAddToClient(client: string, name: string, via: string, replace: boolean): Promise<WritePreview>;
  /** What `switchClientEntry` would write; writes nothing. */
  previewSwitchClientEntry(client: string, server: string): Promise<WritePreview>;
  /** The Undo of an Add or a Switch (`ClientWrite.undo_id`): the client's file as it was. */
  undoClientWrite(id: number): Promise<WriteUndone>;
  /** The mcp-remote entries that can be switched, and the connector each reaches. */
  switchCandidates(): Promise<SwitchCandidate[]>;
  /** The gateway's URL and its clients (never a secret). */
  gatewayClients(): Promise<GatewayClients>;
  /** Revokes a gateway client (its secret stops working); answers the list. */
  revokeGatewayClient(label: string): Promise<GatewayClients>;
  /** The gateway's sign-in requests waiting for an answer, the oldest first. */
  consentRequests(): Promise<ConsentRequest[]>;
  /**
   * Allow (every connector in use, or the one asked for) or deny a sign-in request; its page in
   * the browser then goes on to the client. Answers the list. Rejects with kind `not_pending`
   * when it was answered in the browser or expired.
   */
  answerConsent(id: string, allow: boolean): Promise<ConsentRequest[]>;
  /** The waiting sign-in requests changed (one came, or was answered): the list now. */
  onConsentsChanged(cb: (requests: ConsentRequest[]) => void): Promise<() => void>;
  /** Whether Patchbay starts at login (the login entry; off by default). Rejects with kind `launch_at_login`. */
  getLaunchAtLogin(): Promise<boolean>;
  /** "Start at login" on or off; answers the setting as it now is. Rejects with kind `launch_at_login`. */
  setLaunchAtLogin(enabled: boolean): Promise<boolean>;
  onStatusChanged(cb: (report: StatusReport) => void): Promise<() => void>;
  /** The periodic check recorded results: fetch the board again (no payload). */
  onHealthChanged(cb: () => void): Promise<() => void>;
  onFocusConnector(cb: (name: string) => void): Promise<() => void>;
  /** The tray or a patchbay://authorize/NAME link asks the window to authorize a connector. */
  onAuthorizeConnector(cb: (name: string) => void): Promise<() => void>;
  /** A `patchbay://authorize/NAME` link: show the row and ask before starting consent. */
  onAskAuthorizeConnector(cb: (name: string) => void): Promise<() => void>;
  /**
   * The page has registered its event listeners (call once, right after): row requests (focus,
   * authorize, ask) come as events from now on; answers, in order, those sent before (to a
   * window created moments ago), each to be handled as its event would have been.
   */
  pageListening(): Promise<QueuedRowRequest[]>;
}

declare global {
  interface Window {
    __TAURI_INTERNALS__?: unknown;
    /** Set by the app when it creates the page (src-tauri/src/window.rs): its status and board. */
    __patchbayBoot?: PageBoot;
  }
}

/** What the page was created with, taken once (a reload asks the backend instead). */
export function takePageBoot(): PageBoot | null {
  const boot = window.__patchbayBoot ?? null;
  delete window.__patchbayBoot;
  return boot;
}

export function isTauri(): boolean {
  return typeof window !== "undefined" && window.__TAURI_INTERNALS__ !== undefined;
}

/** Whatever a command rejected with, as `{ kind, message }`: the backend's error as it is, or
 * kind `error` for anything else (a fault in the window itself, named in the message). */
export function toBackendError(err: unknown): BackendError {
  if (err && typeof err === "object") {
    const o = err as Record<string, unknown>;
    const message = typeof o.message === "string" ? o.message : JSON.stringify(err);
    if (typeof o.kind === "string") {
      const needed = o.needs_client as IpcError["needs_client"];
      const out: IpcError = { kind: o.kind as ErrorKind, message };
      if (needed) out.needs_client = needed;
      if (typeof o.field === "string") out.field = o.field;
      return out;
    }
    return { kind: "error", message: err instanceof Error ? `${err.name}: ${message}` : message };
  }
  if (typeof err === "string") return { kind: "error", message: err };
  return { kind: "error", message: String(err) };
}

function tauriBackend(): Backend {
  return {
    getStatus: () => invoke<StatusReport>("get_status"),
    deleteUnclaimedCredential: (credentialKey) =>
      invoke<StatusReport>("delete_unclaimed_credential", { credentialKey }),
    startAuthorization: (name) => invoke<StartedFlow>("start_authorization", { name }),
    cancelAuthorization: (name) => invoke<StatusReport>("cancel_authorization", { name }),
    reopenAuthorization: (name) => invoke<void>("reopen_authorization", { name }),
    completeAuthorization: (name, pasted) => invoke<StatusReport>("complete_authorization", { name, pasted }),
    enterClient: (name, clientId, clientSecret) => invoke<StartedFlow>("enter_client", { name, clientId, clientSecret }),
    setConnectorKey: (name, variable, value) => invoke<StatusReport>("set_connector_key", { name, variable, value }),
    clearConnectorKey: (name, variable) => invoke<StatusReport>("clear_connector_key", { name, variable }),
    addToRuntime: (name, runtime) => invoke<StatusReport>("add_to_runtime", { name, runtime }),
    refreshConnector: (name) => invoke<StatusReport>("refresh_connector", { name }),
    disconnectConnector: (name, forgetRegistration) =>
      invoke<StatusReport>("disconnect_connector", { name, forgetRegistration }),
    checkConnector: (name) => invoke<ConnectorCheck>("check_connector", { name }),
    getHealthBoard: () => invoke<HealthBoard>("get_health_board"),
    writeBackTransport: (name, transport) => invoke<StatusReport>("write_back_transport", { name, transport }),
    enableConnector: (name) => invoke<StatusReport>("enable_connector", { name }),
    addCustomConnector: (spec) => invoke<StatusReport>("add_custom_connector", { spec }),
    probeRemoteUrl: (url) => invoke<RemoteAuth>("probe_remote_url", { url }),
    disableConnector: (name) => invoke<StatusReport>("disable_connector", { name }),
    manageConnector: (name) => invoke<StatusReport>("manage_connector", { name }),
    clientTargets: () => invoke<ClientTarget[]>("client_targets"),
    addToClient: (client, name, via, replace) => invoke<ClientWrite>("add_to_client", { client, name, via, replace }),
    switchClientEntry: (client, server) => invoke<ClientWrite>("switch_client_entry", { client, server }),
    switchCandidates: () => invoke<SwitchCandidate[]>("switch_candidates"),
    previewAddToClient: (client, name, via, replace) => invoke<WritePreview>("preview_add_to_client", { client, name, via, replace }),
    previewSwitchClientEntry: (client, server) => invoke<WritePreview>("preview_switch_client_entry", { client, server }),
    undoClientWrite: (id) => invoke<WriteUndone>("undo_client_write", { id }),
    gatewayClients: () => invoke<GatewayClients>("gateway_clients"),
    revokeGatewayClient: (label) => invoke<GatewayClients>("revoke_gateway_client", { label }),
    consentRequests: () => invoke<ConsentRequest[]>("consent_requests"),
    answerConsent: (id, allow) => invoke<ConsentRequest[]>("answer_consent", { id, allow }),
    onConsentsChanged: (cb) => listen<ConsentRequest[]>("consents-changed", (e) => cb(e.payload)),
    getLaunchAtLogin: () => invoke<boolean>("get_launch_at_login"),
    setLaunchAtLogin: (enabled) => invoke<boolean>("set_launch_at_login", { enabled }),
    onStatusChanged: (cb) => listen<StatusReport>("status-changed", (e) => cb(e.payload)),
    onHealthChanged: (cb) => listen<null>("health-changed", () => cb()),
    onFocusConnector: (cb) => listen<string>("focus-connector", (e) => cb(e.payload)),
    onAuthorizeConnector: (cb) => listen<string>("authorize-connector", (e) => cb(e.payload)),
    onAskAuthorizeConnector: (cb) => listen<string>("ask-authorize-connector", (e) => cb(e.payload)),
    pageListening: () => invoke<QueuedRowRequest[]>("page_listening"),
  };
}

export async function createBackend(): Promise<Backend> {
  if (isTauri()) return tauriBackend();
  const { createMockBackend } = await import("./mock");
  return createMockBackend(new URLSearchParams(window.location.search));
}
