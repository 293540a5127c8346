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
  | "rejected"
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

/** A degraded connector in the status report (the board's `Degraded` has its kind too). */
export interface DegradedStatus {
  since: string;
  /** The failure that tipped it, one line, secrets scrubbed. */
  error: string;
}

/** The clients whose MCP server configs Patchbay reads (docs/status-json.md, `found_in`). */
export type ClientId =
  | "claude_code"
  | "codex"
  | "claude_desktop"
  | "cursor"
  | "vs_code"
  | "windsurf"
  | "gemini_cli";

/** One client config entry a connector was found in. */
export interface FoundIn {
  client: ClientId | string;
  /** The client's name as shown ("Cursor", "Claude Code"). */
  display_name: string;
  /** The config file, absolute. */
  file: string;
  /** The server's name in that client's config. */
  server_name: string;
}

/** Why a connector is in use (counted, badged, refreshed, checked, offered). */
export type InUseReason = "enabled" | "user_catalog" | "explicit_catalog" | "client" | "credential";

/** Where the stored credential came from: authorized in Patchbay, or adopted from a tool's store. */
export type CredentialSource = "patchbay" | "claude_code" | "codex" | "mcp_remote";

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
  /** Set while its connection checks keep failing (the health board's rule); null otherwise. */
  degraded: DegradedStatus | null;
  /** Why it is in use (never empty for a listed connector). */
  in_use_because: (InUseReason | string)[];
  /** The client config entries that configure it (one per client file entry). */
  found_in: FoundIn[];
  /** `catalog`: a catalog entry. `client`: configured in a client only, named and typed from that config. */
  origin: "catalog" | "client" | string;
  /** Where the stored credential came from; null without one. */
  credential_source: CredentialSource | string | null;
}

/** What a gallery entry needs before it works: sign-in, an API key, or nothing. */
export type GalleryNeeds = "oauth" | "secret" | "nothing";

/** A catalog entry not in use: what the "Add connector" view offers. */
export interface GalleryEntry {
  name: string;
  title: string;
  description: string | null;
  transport: string;
  url: string | null;
  needs: GalleryNeeds | string;
  /** The variables it needs set (for `secret`). */
  variables: string[];
  /** The entry says `enabled: false`: hidden even where a client configures it. */
  disabled: boolean;
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
  /** How many connectors are degraded (counted in need_attention too). */
  degraded: number;
  secret_store: {
    reachable: boolean;
    message: string | null;
    /** The keychain answered but the vault's key is missing from it: unlocking will not help. */
    key_unusable: boolean;
  };
  catalog: { sources: CatalogSource[] };
  connectors: Connector[];
  unclaimed: UnclaimedCredential[];
  runtimes?: RuntimeInfo[];
  /** Catalog entries not in use, sorted by title. Never counted. */
  gallery: GalleryEntry[];
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

// ---- connection checks and the health board (docs/check-json.md) -------------------------

/** How a connector is reached, as the catalog and the check spell it. */
export type TransportKind = "stdio" | "streamable-http" | "sse";

/** A tool a server offers, named as the agent sees it. */
export interface ToolInfo {
  /** `<connector>.<tool>`, e.g. `notion.search`. */
  name: string;
  /** The server's own name for it. */
  tool: string;
  title: string | null;
  description: string | null;
}

/** Why a check failed. */
export interface CheckErrorSummary {
  /** unreachable, timed_out, rejected, server_error, needs_authorization, credential_rejected,
   * protocol, spawn_failed, exited, missing_configuration, invalid. */
  kind: string;
  message: string;
  retryable: boolean;
  http_status: number | null;
}

/** One transport tried during a check. */
export interface CheckAttempt {
  transport: TransportKind;
  ok: boolean;
  elapsed_ms: number;
  /** The backend sends the error summary; older builds sent the message alone. */
  error: CheckErrorSummary | string | null;
}

/** Why and since when a connector is degraded (agents are told it is unavailable). */
export interface Degraded {
  since: string;
  error: string;
  kind: string;
}

/** One recorded check (the health drawer lists the failed ones). */
export interface CheckRecord {
  at: string;
  ok: boolean;
  latency_ms: number;
  transport: TransportKind | string;
  error_kind: string | null;
  http_status: number | null;
  error: string | null;
  /** Failures in a row when it was recorded. */
  streak: number;
}

export interface HealthStats {
  connector: string;
  calls: number;
  failures: number;
  /** 0..1 */
  fail_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
  last_error: string | null;
  last_error_at: string | null;
  last_ok_at: string | null;
  last_check_at: string | null;
  /** Newest first, at most 10. */
  recent_errors: CheckRecord[];
}

export type CheckTransition =
  | "healthy"
  | "recovered"
  | "counted"
  | "in_backoff"
  | "not_counted"
  | "degraded"
  | "still_degraded";

/** What `check_connector` answers: one real MCP handshake (initialize + tools/list). */
export interface ConnectorCheck {
  connector: string;
  checked_at: string;
  ok: boolean;
  /** Why nothing was contacted; null when the check ran. */
  skipped: string | null;
  configured_transport: TransportKind | null;
  /** The transport that answered, or the last one tried. */
  transport: TransportKind | null;
  /** Set when the configured transport was rejected and this one answered. */
  fell_back_to: TransportKind | null;
  /** The offer to save `fell_back_to` to the user catalog. */
  write_back: { transport: TransportKind; file: string } | null;
  latency_ms: number | null;
  server: { name: string; version: string; protocol_version: string } | null;
  tools: ToolInfo[];
  error: CheckErrorSummary | null;
  /** What to do about it, one sentence (may hold `code` spans). */
  advice: string | null;
  action: ConnectorAction | null;
  attempts: CheckAttempt[];
  transition: CheckTransition | null;
  degraded: Degraded | null;
  consecutive_failures: number;
  health: HealthStats;
}

/** The tools a connector offered at its last successful check. */
export interface KnownTools {
  checked_at: string;
  transport: TransportKind | string;
  tools: ToolInfo[];
}

/** One row of the health board: the connector's stats, flattened, plus its streak. */
export interface HealthRow extends HealthStats {
  transport: string;
  degraded: Degraded | null;
  consecutive_failures: number;
  /** When a failing connector's next check counts; null when healthy. */
  next_check_at: string | null;
  tools: KnownTools | null;
}

/** What `get_health_board` answers: every catalog connector, checked or not. */
export interface HealthBoard {
  generated_at: string;
  connectors: HealthRow[];
}

// ---- other MCP clients and the gateway (issue 12) ------------------------------------------

/** A client "Add to" writes (`client_targets`), as client_config::ClientTarget serializes it. */
export interface ClientTarget {
  /** `cursor`, `vscode`, `claude-desktop`, `windsurf`. */
  client: string;
  display_name: string;
  /** Its config directory exists: the window offers "Add to" only then. */
  found: boolean;
  /** It can reach the gateway over HTTP (Claude Desktop: stdio only). */
  http: boolean;
  /** The file Add writes. */
  file: string;
}

/** What `add_to_client` and `switch_client_entry` answer. */
export interface ClientWrite {
  client: string;
  client_name: string;
  /** The entry's name in the client's config. */
  name: string;
  connector: string;
  file: string;
  change: "added" | "replaced" | "unchanged";
  /** The file as it was, saved by this write (the first write to it only). */
  backup: string | null;
  via: "stdio" | "gateway";
  /** The gateway client minted for this write, when one was. */
  gateway_client: string | null;
  /** A client-only server that is now in the user catalog (Switch). */
  managed: boolean;
}

/** An `npx mcp-remote URL` entry "Switch to Patchbay" can rewrite (`switch_candidates`, and
 * `patchbay switch --list --json`). */
export interface SwitchCandidate {
  client: string;
  entry: string;
  url: string;
  /** The connector in use with that URL; null: none, the switch is refused. */
  connector: string | null;
  file: string;
}

/** A gateway client: never its secret (Patchbay keeps only a hash). `patchbay gateway client
 * list --json` sends the same fields. */
export interface GatewayClient {
  label: string;
  /** The only connectors it may reach; null: every connector in use. */
  only: string[] | null;
  created_at: string;
}

/** What `gateway_clients` and `revoke_gateway_client` answer. */
export interface GatewayClients {
  /** The aggregate endpoint (`/mcp/NAME` reaches one connector). */
  url: string;
  port: number;
  /** The registry of hashes. */
  file: string;
  clients: GatewayClient[];
}
