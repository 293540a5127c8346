// The seam between the window and Patchbay. Inside Tauri it uses invoke/listen; in a plain
// browser (tests, `npm run dev`) it loads the mock backend, which serves a fixture.

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type { BackendError, StartedFlow, StatusReport } from "./types";

export interface Backend {
  getStatus(): Promise<StatusReport>;
  deleteUnclaimedCredential(credentialKey: string): Promise<StatusReport>;
  /** Starts the OAuth flow (Patchbay opens the browser). Rejects with a BackendError. */
  startAuthorization(name: string): Promise<StartedFlow>;
  /** Finishes a paste-back flow from the pasted address or code; answers the new report. */
  completeAuthorization(name: string, pasted: string): Promise<StatusReport>;
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
  onStatusChanged(cb: (report: StatusReport) => void): Promise<() => void>;
  onFocusConnector(cb: (name: string) => void): Promise<() => void>;
  /** The tray or a patchbay://authorize/NAME link asks the window to authorize a connector. */
  onAuthorizeConnector(cb: (name: string) => void): Promise<() => void>;
}

declare global {
  interface Window {
    __TAURI_INTERNALS__?: unknown;
  }
}

export function isTauri(): boolean {
  return typeof window !== "undefined" && window.__TAURI_INTERNALS__ !== undefined;
}

/** Whatever a command rejected with, as `{ kind, message }`. */
export function toBackendError(err: unknown): BackendError {
  if (err && typeof err === "object") {
    const o = err as Record<string, unknown>;
    const message = typeof o.message === "string" ? o.message : JSON.stringify(err);
    const kind = typeof o.kind === "string" ? o.kind : err instanceof Error ? err.name : "error";
    return { kind, message };
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
    completeAuthorization: (name, pasted) => invoke<StatusReport>("complete_authorization", { name, pasted }),
    addToRuntime: (name, runtime) => invoke<StatusReport>("add_to_runtime", { name, runtime }),
    refreshConnector: (name) => invoke<StatusReport>("refresh_connector", { name }),
    disconnectConnector: (name, forgetRegistration) =>
      invoke<StatusReport>("disconnect_connector", { name, forgetRegistration }),
    onStatusChanged: (cb) => listen<StatusReport>("status-changed", (e) => cb(e.payload)),
    onFocusConnector: (cb) => listen<string>("focus-connector", (e) => cb(e.payload)),
    onAuthorizeConnector: (cb) => listen<string>("authorize-connector", (e) => cb(e.payload)),
  };
}

export async function createBackend(): Promise<Backend> {
  if (isTauri()) return tauriBackend();
  const { createMockBackend } = await import("./mock");
  return createMockBackend(new URLSearchParams(window.location.search));
}
