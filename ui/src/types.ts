// The status report the window receives from `get_status` and the `status-changed` event.
// Mirrors docs/status-json.md (schema version 1). Fields may be added within a version.

export type ConnectorStateId =
  | "ready"
  | "needs_authorization"
  | "token_expired"
  | "needs_reauth"
  | "missing_configuration"
  | "unavailable"
  | "secret_store_unreachable"
  | "no_credential_required"
  | "probe_failed";

export type ConnectorAction = "authorize" | "reauthorize" | "set_variable" | "edit_catalog";

export interface MissingVariable {
  name: string;
  field: string;
}

export interface CredentialInfo {
  key: string;
  expires_at: string | null;
  has_refresh_token: boolean;
  issuer: string | null;
  updated_at: string | null;
  /** The runtime (`claude_code`, `codex`) whose rotated pair Patchbay adopted last. */
  last_rotated_by?: string | null;
  last_rotated_at?: string | null;
}

export type RuntimeId = "claude_code" | "codex";

/** One runtime server a connector is bridged to. */
export interface BridgeInfo {
  runtime: RuntimeId | string;
  server_name: string;
  credential_key: string;
  in_store: boolean;
}

/** How one refresh attempt ended (docs/status-json.md, `refresh_history`). */
export type RefreshOutcomeId =
  | "refreshed"
  | "adopted"
  | "retryable"
  | "ambiguous"
  | "transient"
  | "permanent"
  | "retired";

/** One attempt of the refresher of record on a connector's credential. Nothing secret. */
export interface RefreshEntry {
  /** RFC 3339. */
  at: string;
  outcome: RefreshOutcomeId | string;
  http_status: number | null;
  /** One line. */
  summary: string;
  /** The server's raw answer (up to 4 KB), secrets already scrubbed. */
  detail: string | null;
  /** In-band retries before this outcome (only for a refresh that never reached the server). */
  retries: number;
}

/** One agent runtime, found on this machine or not. */
export interface RuntimeInfo {
  runtime: RuntimeId | string;
  found: boolean;
  config_path: string;
}

export interface Connector {
  name: string;
  title: string;
  description: string | null;
  transport: string;
  url: string | null;
  state: ConnectorStateId;
  label: string;
  severity: number;
  needs_attention: boolean;
  blocks_start: boolean;
  detail: string | null;
  action: ConnectorAction | null;
  missing_variables: MissingVariable[];
  unavailable_reason: string | null;
  one_shot: boolean;
  one_shot_note: string | null;
  credential: CredentialInfo | null;
  source: string | null;
  bridges?: BridgeInfo[];
  /** Runtimes this connector can be added to (decided by the core). */
  can_add_to?: string[];
  /** The refresher's last attempts (newest first, up to 10); empty or absent when none. */
  refresh_history?: RefreshEntry[];
}

export interface CatalogSource {
  path: string;
  kind: "default" | "user" | string;
  present: boolean;
  entries: number;
  error: string | null;
}

export interface UnclaimedCredential {
  credential_key: string;
  server_name: string;
  server_url: string | null;
  updated_at: string | null;
  why: string | null;
}

export interface StatusReport {
  version: number;
  generated_at: string;
  need_attention: number;
  worst: ConnectorStateId | null;
  secret_store: { reachable: boolean; message: string | null };
  catalog: { sources: CatalogSource[] };
  connectors: Connector[];
  unclaimed: UnclaimedCredential[];
  runtimes?: RuntimeInfo[];
}

/** What a rejected command carries (the backend's serialized error). */
export interface BackendError {
  kind: string;
  message: string;
}

/** What `start_authorization` answers: how the flow that just started finishes. */
export interface StartedFlow {
  connector: string;
  /** The consent page; the Authorizer has already opened it in the system browser. */
  authorize_url: string;
  /** `receiver`: the browser comes back to Patchbay by itself. `paste_back`: paste the address. */
  completion: "receiver" | "paste_back";
  redirect_uri: string;
  /** For paste_back: why the flow does not come back by itself. */
  why?: string | null;
  /** Something the user should know (the port was taken, the browser did not open). */
  notice?: string | null;
  expires_at: string;
}
