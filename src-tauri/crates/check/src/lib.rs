//! Patchbay's connection check: the one explicit way to find out whether a connector really
//! answers (the status never contacts a server). A check performs the real MCP handshake over the
//! connector's transport with the official Rust SDK (rmcp): the revision negotiated
//! (`server/discover` at 2026-07-28, else `initialize`), then `tools/list`.
//!
//! - `target`: what to connect to, resolved, with secrets kept as [`patchbay_vault::Secret`];
//! - `handshake`: one attempt over one transport, with a time limit on every stage;
//! - `legacy_sse`: the legacy HTTP+SSE client transport (rmcp no longer has one);
//! - `sse`: the one `text/event-stream` parser, shared with the gateway;
//! - `classify`: rmcp's errors as [`CheckError`]s: reachable-but-rejected (fall back) versus
//!   unreachable (do not), and what a 401 means for this kind of server;
//! - `fallback`: the check as a whole, streamable HTTP ⇄ SSE when the rule allows, each
//!   transport retried after a passing failure when the entry asks (`retry`);
//! - `retry`: which failures are retried, the backoff with jitter, and the injected sleeper;
//! - `health`: the ring buffer of checks per connector in its own SQLite file;
//! - `degraded`: three failures in a row, backing off between, make a connector degraded;
//! - `npm_cache`: separate npm caches for npx servers that share a package spec.
//!
//! This crate knows nothing of the catalog's files or the vault's database: the core resolves a
//! catalog entry into a [`CheckTarget`] and records outcomes in a [`HealthStore`].

pub mod classify;
pub mod degraded;
pub mod error;
pub mod fallback;
pub mod handshake;
pub mod health;
pub mod legacy_sse;
pub mod npm_cache;
pub mod recorder;
pub mod retry;
pub mod spool;
pub mod sse;
pub mod target;

pub use degraded::{system_clock, Clock, Degraded, DegradedRule, Streak, Transition};
pub use error::{CheckError, CheckErrorKind, HealthError, Stage};
pub use fallback::{check, check_paced, Attempt, CheckOutcome, ErrorSummary};
pub use handshake::{qualified_tool_name, Handshake, ServerIdentity, Timeouts, ToolInfo};
pub use health::{
    CallRecord, CheckRecord, HealthStats, HealthStore, KnownTools, Recorded, StoredTool,
    HEALTH_FILE,
};
pub use recorder::CallRecorder;
pub use retry::{random_unit, Pacing, RetryPolicy, Sleeper, UnitRandom};
pub use spool::spool_path;
pub use target::{
    AuthKind, CheckTarget, Endpoint, HttpEndpoint, Redactor, StdioLaunch, TransportKind,
};
