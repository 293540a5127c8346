//! Runtime bridges: the agent runtimes' own MCP credential stores (Claude Code's
//! `.credentials.json` or macOS Keychain item, Codex's file or keyring store), the servers configured in each runtime,
//! safe writes that never clobber a fresher entry, and adoption of the pairs a runtime rotated.
//! See shared/reference/runtime-credential-stores.md for the measured formats.

pub mod atomic;
pub mod claude;
pub mod claude_keychain;
pub mod claude_lock;
pub mod claude_logs;
pub mod clients;
pub mod codex;
pub mod config;
pub mod heal;
pub mod left_behind;
pub mod lock;
pub mod mcp_remote;
pub mod memory;
pub mod reconcile;
pub mod store;
pub mod toml_text;
pub mod watch;

pub use store::{Runtime, RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
