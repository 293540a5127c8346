// Generated from the Rust types by tests/tests/ui_types.rs (ts-rs): do not edit.
// run `UPDATE_UI_TYPES=1 cargo test -p patchbay-e2e --locked --test ui_types` to update it.

export type Action = "authorize" | "reauthorize" | "set_variable" | "edit_catalog";

export type Attempt = { transport: TransportKind, ok: boolean, elapsed_ms: number, error: ErrorSummary | null, 
/**
 * 0 for a transport's first try, n for its n-th retry (the entry's `retry`).
 */
retry: number, 
/**
 * The backoff waited before this try (0 for a first try).
 */
waited_ms: number, };

export type BoardRow = { transport: string, degraded: Degraded | null, consecutive_failures: number, 
/**
 * When a failing connector's next check counts (the backoff); `null` when healthy.
 */
next_check_at: string | null, 
/**
 * The tools it offered at its last successful check.
 */
tools: KnownTools | null, connector: string, 
/**
 * Checks in the window (at most [`RING_CAPACITY`]).
 */
calls: number, failures: number, 
/**
 * `failures / calls`, 0 when there were none.
 */
fail_rate: number, 
/**
 * Latency percentiles of the successful checks (a refused connection's 1 ms would flatter
 * them and a timeout's 15 s would swamp them); `None` before the first success.
 */
p50_ms: number | null, p95_ms: number | null, last_error: string | null, last_error_at: string | null, last_ok_at: string | null, last_check_at: string | null, 
/**
 * The newest failures first, at most [`RECENT_ERRORS`] (the error drawer).
 */
recent_errors: Array<CheckRecord>, };

export type BridgeSummary = { 
/**
 * `claude_code` or `codex`.
 */
runtime: string, 
/**
 * The runtime's own name for the server (it decides the key).
 */
server_name: string, 
/**
 * The key the runtime files the credential under.
 */
credential_key: string, 
/**
 * Whether the runtime's credential store holds an entry under that key.
 */
in_store: boolean, };

export type CatalogSourceStatus = { path: string, kind: SourceKind, present: boolean, entries: number, error: string | null, };

export type CatalogStatus = { sources: Array<CatalogSourceStatus>, };

export type CheckErrorKind = "unreachable" | "timed_out" | "rejected" | "server_error" | "needs_authorization" | "credential_rejected" | "protocol" | "spawn_failed" | "exited" | "missing_configuration" | "invalid";

export type CheckRecord = { at: string, ok: boolean, latency_ms: number, transport: TransportKind, error_kind: string | null, http_status: number | null, error: string | null, 
/**
 * Failures in a row at the time.
 */
streak: number, };

export type ClientTarget = { 
/**
 * The client's id (`cursor`, `vscode`, `claude-desktop`, `windsurf`, `gemini`).
 */
client: string, display_name: string, 
/**
 * The directory of its user config exists: the client is (or was) on this machine.
 */
found: boolean, 
/**
 * It can reach the gateway over HTTP; Claude Desktop's config only launches commands.
 */
http: boolean, 
/**
 * The file Add writes.
 */
file: string, };

export type ClientWrite = { 
/**
 * The client's id (`cursor`, `vscode`, `claude-desktop`, `windsurf`).
 */
client: string, client_name: string, 
/**
 * The entry's name in the client's config.
 */
name: string, 
/**
 * The connector it reaches.
 */
connector: string, file: string, 
/**
 * `added`, `replaced` or `unchanged`.
 */
change: string, 
/**
 * The file as it was, saved by this write (the first write only).
 */
backup: string | null, via: Via, 
/**
 * The gateway client minted for this write, when one was.
 */
gateway_client: string | null, 
/**
 * A client-only server that is now in the user catalog (Switch).
 */
managed: boolean, 
/**
 * What the window's Undo names to put the file back ([`UndoLog::keep`] sets it).
 */
undo_id: number | null, 
/**
 * What is wrong with the entry's command: no installed `patchbay` was found
 * ([`client_config::connect_warning`]).
 */
warning: string | null, };

export type ConnectorCheck = { connector: string, checked_at: string, ok: boolean, 
/**
 * Why nothing was contacted (declared unavailable, missing configuration, an invalid
 * entry, a keychain that did not answer); `null` when the check ran.
 */
skipped: string | null, 
/**
 * The transport the catalog names (`stdio`, `streamable-http`, `sse`).
 */
configured_transport: TransportKind | null, 
/**
 * The transport that answered, or the last one tried.
 */
transport: TransportKind | null, 
/**
 * Set when the configured transport was rejected and this one answered.
 */
fell_back_to: TransportKind | null, write_back: WriteBackOffer | null, 
/**
 * Connect, `initialize` and `tools/list` of the transport that answered.
 */
latency_ms: number | null, server: ServerIdentity | null, 
/**
 * The tools offered, named `<connector>.<tool>`.
 */
tools: Array<ToolInfo>, error: ErrorSummary | null, 
/**
 * What to do about it, one sentence.
 */
advice: string | null, 
/**
 * `authorize` only for an OAuth-capable server's 401; `set_variable` / `edit_catalog` for a
 * rejected static credential or missing configuration.
 */
action: Action | null, attempts: Array<Attempt>, 
/**
 * What this check did to the failure streak; `null` when skipped.
 */
transition: Transition | null, 
/**
 * Set while the connector is degraded (after this check).
 */
degraded: Degraded | null, 
/**
 * Counted failures in a row (after this check).
 */
consecutive_failures: number, health: HealthStats, };

export type ConnectorState = "ready" | "needs_authorization" | "token_expired" | "needs_reauth" | "missing_configuration" | "unavailable" | "secret_store_unreachable" | "no_credential_required" | "probe_failed";

export type ConnectorStatus = { name: string, title: string, description: string | null, 
/**
 * `stdio`, `streamable-http`, `sse`, or `unknown` for an entry that failed validation.
 */
transport: string, url: string | null, state: ConnectorState, label: string, severity: number, needs_attention: boolean, blocks_start: boolean, detail: string, action: Action | null, missing_variables: Array<MissingVariable>, 
/**
 * Every variable its entry uses, once each, in the order first used.
 */
variables: Array<VariableStatus>, unavailable_reason: string | null, one_shot: boolean, one_shot_note: string | null, credential: CredentialSummary | null, source: string, 
/**
 * The runtime servers this connector is bridged to (docs/status-json.md).
 */
bridges: Array<BridgeSummary>, 
/**
 * Runtimes found on this machine that this connector can be added to ("Add to Claude
 * Code"): remote, OAuth-capable, not bridged there yet, and a transport the runtime speaks.
 */
can_add_to: Array<string>, 
/**
 * The refresher's last attempts on this connector's credential, newest first (filled by the
 * core; empty when it never tried): the window's error drawer.
 */
refresh_history: Array<RefreshEntry>, 
/**
 * Set while its connection checks keep failing (the health board's degraded rule, filled
 * by the core's `Patchbay::status`); such a row needs attention whatever its state.
 */
degraded: DegradedStatus | null, 
/**
 * Why it is in use (filled by [`StatusReport::apply_usage`]; empty before).
 */
in_use_because: Array<InUseReason>, 
/**
 * The client config entries that configure it ("Found in Cursor, Claude Code").
 */
found_in: Array<FoundIn>, 
/**
 * A catalog entry, or a server configured in a client and absent from every catalog.
 */
origin: Origin, 
/**
 * Where the stored credential came from: `patchbay` (authorized here), or adopted from
 * `claude_code`, `codex`, `mcp_remote`; `null` without a credential.
 */
credential_source: CredentialSource | null, };

export type ConsentRequest = { 
/**
 * Names the request to [`ConsentDesk::answer`]; random, the page's own.
 */
id: string, 
/**
 * The client as its registration or metadata document names it (with the document's host).
 */
client_name: string, 
/**
 * The one connector it asks for (it was given `/mcp/NAME`); `null`: every connector in use.
 */
connector: string | null, 
/**
 * How long it has waited, in seconds.
 */
waiting_secs: number, };

export type CredentialSource = "patchbay" | "claude_code" | "codex" | "mcp_remote";

export type CredentialSummary = { key: string, expires_at: string | null, has_refresh_token: boolean, issuer: string | null, updated_at: string, 
/**
 * The runtime (`claude_code`, `codex`) whose rotated pair Patchbay adopted last; `null` when
 * Patchbay obtained the stored pair itself.
 */
last_rotated_by: string | null, last_rotated_at: string | null, };

export type CustomConnector = { name: string, title: string | null, server: CustomServer, };

export type CustomServer = { "kind": "remote", url: string, headers: Array<CustomValue>, } | { "kind": "stdio", command: string, args: Array<string>, env: Array<CustomValue>, };

export type CustomValue = { name: string, value: string, 
/**
 * Kept in the vault (the entry holds `${VAR}`), not written into the catalog.
 */
secret: boolean, };

export type Degraded = { since: string, 
/**
 * The failure that tipped it, one line, secrets scrubbed.
 */
error: string, 
/**
 * Its [`CheckError::kind`].
 */
kind: string, };

export type DegradedStatus = { since: string, 
/**
 * The failure that tipped it (or the latest one since), one line, secrets scrubbed.
 */
error: string, };

export type ErrorKind = "no_home" | "secret_store" | "unknown_connector" | "invalid_entry" | "no_credential" | "not_pending" | "refused" | "io" | "bad_file" | "internal" | "runtime_store" | "client_config" | "not_authorizable" | "invalid_input" | "oauth" | "client_needed" | "timed_out" | "watch" | "health_store" | "catalog_write" | "conflict" | "gateway_clients" | "launch_at_login";

export type ErrorSummary = { 
/**
 * [`CheckError::kind`]: `unreachable`, `timed_out`, `rejected`, `needs_authorization`, ...
 */
kind: CheckErrorKind, message: string, retryable: boolean, http_status: number | null, };

export type FoundIn = { 
/**
 * `claude_code`, `codex`, `claude_desktop`, `cursor`, `vs_code`, `windsurf`, `gemini_cli`.
 */
client: string, 
/**
 * "Cursor".
 */
display_name: string, file: string, 
/**
 * The client's own name for the server.
 */
server_name: string, };

export type GalleryEntry = { name: string, title: string, description: string | null, transport: string, url: string | null, needs: Needs, 
/**
 * The `${VAR}`s without a default it uses (what "a key" means for it).
 */
variables: Array<string>, 
/**
 * Its entry says `"enabled": false`; adding it re-enables it.
 */
disabled: boolean, };

export type GatewayClient = { label: string, 
/**
 * The only connectors it may reach; `null`: every connector in use.
 */
only: Array<string> | null, created_at: string, };

export type GatewayClients = { 
/**
 * The aggregate endpoint; `/mcp/NAME` reaches one connector.
 */
url: string, port: number, 
/**
 * The registry (hashes only).
 */
file: string, clients: Array<GatewayClient>, };

export type HealthBoard = { generated_at: string, connectors: Array<BoardRow>, };

export type HealthStats = { connector: string, 
/**
 * Checks in the window (at most [`RING_CAPACITY`]).
 */
calls: number, failures: number, 
/**
 * `failures / calls`, 0 when there were none.
 */
fail_rate: number, 
/**
 * Latency percentiles of the successful checks (a refused connection's 1 ms would flatter
 * them and a timeout's 15 s would swamp them); `None` before the first success.
 */
p50_ms: number | null, p95_ms: number | null, last_error: string | null, last_error_at: string | null, last_ok_at: string | null, last_check_at: string | null, 
/**
 * The newest failures first, at most [`RECENT_ERRORS`] (the error drawer).
 */
recent_errors: Array<CheckRecord>, };

export type InUseReason = "enabled" | "user_catalog" | "explicit_catalog" | "client" | "credential";

export type IpcError = { kind: ErrorKind, 
/**
 * An English sentence for the user.
 */
message: string, 
/**
 * With `client_needed`: the client to create at the provider, then enter with
 * `enter_client`.
 */
needs_client?: NeededClient, 
/**
 * With `invalid_input` from a form: the field the message is about (the message then
 * leaves the field's name out).
 */
field?: string, };

export type KnownTools = { checked_at: string, transport: TransportKind, tools: Array<StoredTool>, };

export type MissingVariable = { name: string, field: string, };

export type NeededClient = { issuer: string, redirect_uri: string, };

export type Needs = "oauth" | "secret" | "nothing";

export type Origin = "catalog" | "client";

export type PageBoot = { report: StatusReport, 
/**
 * None when the board cannot be read now (the page shows no health lines until it can).
 */
board: HealthBoard | null, };

export type QueuedRowRequest = { 
/**
 * The connector's name.
 */
name: string, request: RowRequest, };

export type RefreshAttemptOutcome = "refreshed" | "adopted" | "retryable" | "ambiguous" | "transient" | "rejected" | "permanent" | "retired";

export type RefreshEntry = { at: string, outcome: RefreshAttemptOutcome, http_status: number | null, summary: string, 
/**
 * The raw answer (up to 4 KB), secrets scrubbed.
 */
detail: string | null, retries: number, };

export type RemoteAuth = { "kind": "oauth" } | { "kind": "open" } | { "kind": "unknown", detail: string, };

export type RowRequest = "focus" | "authorize" | "ask_to_authorize";

export type RuntimeSummary = { 
/**
 * `claude_code` or `codex`.
 */
runtime: string, 
/**
 * Whether any of its files exist.
 */
found: boolean, 
/**
 * Its server config file (`.claude.json`; Codex's `config.toml`).
 */
config_path: string, };

export type SecretStoreStatus = { 
/**
 * Whether the vault's secrets can be unsealed (the keychain answered with this vault's key).
 */
reachable: boolean, message: string | null, 
/**
 * The keychain answered but the vault's key is missing from it or is not this vault's:
 * unlocking will not help. `false` when it did not answer at all.
 */
key_unusable: boolean, };

export type ServerIdentity = { name: string, version: string, 
/**
 * The protocol revision negotiated with it (`2026-07-28` through `server/discover`, or
 * what it agreed to in `initialize`).
 */
protocol_version: string, };

export type SourceKind = "default" | "user" | "explicit";

export type Started = { connector: string, authorize_url: string, 
/**
 * Something the user should know (the port was taken, the browser did not open).
 */
notice: string | null, expires_at: string, } & ({ "completion": "receiver", redirect_uri: string, } | { "completion": "paste_back", redirect_uri: string, why: string, });

export type StatusReport = { version: number, generated_at: string, need_attention: number, worst: ConnectorState | null, 
/**
 * How many rows are degraded (their connection checks keep failing); counted in
 * `need_attention` too.
 */
degraded: number, secret_store: SecretStoreStatus, catalog: CatalogStatus, connectors: Array<ConnectorStatus>, unclaimed: Array<UnclaimedCredential>, 
/**
 * The agent runtimes Patchbay bridges to, found or not (docs/status-json.md).
 */
runtimes: Array<RuntimeSummary>, 
/**
 * Catalog entries not in use, for the window's "Add connector" view (filled by
 * [`StatusReport::apply_usage`]; empty before).
 */
gallery: Array<GalleryEntry>, 
/**
 * Each client config that could not be read or parsed, one line each naming the client and
 * the file (its servers are missing from `connectors`; the other clients' are listed).
 */
client_errors: Array<string>, };

export type StoredTool = { 
/**
 * `<connector>.<tool>`.
 */
name: string, tool: string, title: string | null, description: string | null, };

export type SwitchCandidate = { 
/**
 * The client's id, as `patchbay add-to` takes it (`cursor`, `claude-code`, `codex`, ...).
 */
client: string, 
/**
 * The entry's name in the client's config.
 */
entry: string, 
/**
 * The URL mcp-remote bridges.
 */
url: string, 
/**
 * The connector in use with that URL, when there is one (else the switch is refused).
 */
connector: string | null, file: string, };

export type ToolInfo = { 
/**
 * `<connector>.<tool>`, e.g. `notion.search`.
 */
name: string, 
/**
 * The server's own name for it.
 */
tool: string, title: string | null, description: string | null, };

export type Transition = "healthy" | "recovered" | "counted" | "in_backoff" | "not_counted" | "degraded" | "still_degraded";

export type TransportKind = "streamable-http" | "sse" | "stdio";

export type UnclaimedCredential = { credential_key: string, server_name: string, server_url: string | null, updated_at: string, why: string, };

export type VariableSource = "vault" | "environment" | "default" | "missing" | "locked";

export type VariableStatus = { name: string, 
/**
 * The first field that uses it (`env.GITHUB_TOKEN`, `headers.Authorization`).
 */
field: string, source: VariableSource, };

export type Via = "stdio" | "gateway";

export type WriteBackOffer = { 
/**
 * The transport to write (`sse` or `streamable-http`).
 */
transport: TransportKind, 
/**
 * The file it would be written to.
 */
file: string, };

export type WritePreview = { client: string, client_name: string, 
/**
 * The entry's name in the client's config.
 */
name: string, 
/**
 * The connector it would reach.
 */
connector: string, file: string, 
/**
 * The entry now, in the file's syntax; `null` when there is none.
 */
before: string | null, 
/**
 * The entry after the write.
 */
after: string, 
/**
 * `added`, `replaced` or `unchanged`.
 */
change: string, via: Via, 
/**
 * What to know before confirming ([`WritePlan::warnings`], in one paragraph): the
 * connector is not ready in Patchbay, no installed `patchbay` for the entry to run.
 */
warning: string | null, };

export type WriteUndone = { client: string, client_name: string, file: string, 
/**
 * The gateway client the write had minted, revoked again (its secret is in no file now).
 */
revoked: string | null, };
