// The window's names for what it receives over IPC. Every shape comes from ./generated/ipc.ts,
// which tests/tests/ui_types.rs generates from the Rust types (ts-rs) and checks in CI: nothing
// here restates a field. To update after a Rust change:
//   UPDATE_UI_TYPES=1 cargo test -p patchbay-e2e --locked --test ui_types

export type {
  Action as ConnectorAction,
  Attempt as CheckAttempt,
  BoardRow as HealthRow,
  BridgeSummary as BridgeInfo,
  CatalogSourceStatus as CatalogSource,
  CheckErrorKind,
  CheckRecord,
  ClientTarget,
  ClientWrite,
  ConnectorCheck,
  ConnectorState as ConnectorStateId,
  ConnectorStatus as Connector,
  CredentialSource,
  CredentialSummary as CredentialInfo,
  Degraded,
  DegradedStatus,
  ErrorKind,
  ErrorSummary as CheckErrorSummary,
  FoundIn,
  GalleryEntry,
  GatewayClient,
  GatewayClients,
  HealthBoard,
  HealthStats,
  InUseReason,
  IpcError,
  KnownTools,
  MissingVariable,
  Needs as GalleryNeeds,
  RefreshAttemptOutcome as RefreshOutcomeId,
  RefreshEntry,
  RuntimeSummary as RuntimeInfo,
  Started as StartedFlow,
  StatusReport,
  SwitchCandidate,
  ToolInfo,
  Transition as CheckTransition,
  TransportKind,
  UnclaimedCredential,
} from "./generated/ipc";

import type { IpcError } from "./generated/ipc";

/** What a rejected command carries: the backend's error, or kind `error` for a fault in the
 * window itself (see `toBackendError`). */
export type BackendError = IpcError | { kind: "error"; message: string };
