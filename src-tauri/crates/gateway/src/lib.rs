//! Patchbay's front door: MCP clients reach every connector in use through Patchbay without
//! holding a token. This crate owns resolving a connector to its upstream with the vault's
//! credential injected and renewed on a 401 (`upstream`), the loopback HTTP gateway
//! (`server`, `proxy`) and the clients allowed to use it (`clients`), and what a client's config
//! gets to reach a connector through Patchbay (`client_entries`). It knows nothing of Tauri.

pub mod aggregate;
pub mod authorization;
pub mod bridge_socket;
pub mod client_entries;
pub mod clients;
mod connections;
pub mod names;
pub mod proxy;
pub mod server;
mod sessions;
pub mod stdio;
mod translated;
pub mod upstream;

pub use authorization::{ConsentDesk, ConsentDeskError, ConsentNotices, ConsentRequest};
pub use clients::{ClientRecord, Clients, ClientsError};
pub use server::{Gateway, GatewayError, GatewayOptions, DEFAULT_PORT, HOP_HEADER};
pub use upstream::{Upstream, UpstreamError, UpstreamTransport, Upstreams};
