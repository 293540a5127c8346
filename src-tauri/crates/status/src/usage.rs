//! Which connectors are the user's business ("in use"), and the rest of the catalog as a
//! gallery. A connector is in use when its entry says `"enabled": true`, when it comes from the
//! user catalog or a `--catalog` file, when a client on the machine configures it, or when
//! Patchbay holds a credential for it; `"enabled": false` takes it out of use whatever else says
//! so. Only rows in use stay in [`StatusReport::connectors`], so every count (the headline, the
//! tray badge, `offered`) and everything driven by the report is about the user's own setup.
//!
//! The core gathers the signals ([`Usage`]: where each server was found, which connectors came
//! from a client alone, where each credential came from) and calls [`StatusReport::apply_usage`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use patchbay_catalog::{Catalog, CatalogItem, ServerEntry, SourceKind};
use patchbay_vault::CredentialSource;
use serde::{Deserialize, Serialize};

use crate::report::{sort_rows, StatusReport};

/// Why a connector is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum InUseReason {
    /// Its entry says `"enabled": true` (Add connector, `patchbay enable`).
    Enabled,
    /// It is in the user catalog.
    UserCatalog,
    /// It is in the `--catalog` file used alone.
    ExplicitCatalog,
    /// A client on this machine configures it.
    Client,
    /// Patchbay holds a credential for it.
    Credential,
}

/// Where a connector's server was found: one client's config entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FoundIn {
    /// `claude_code`, `codex`, `claude_desktop`, `cursor`, `vs_code`, `windsurf`, `gemini_cli`.
    pub client: String,
    /// "Cursor".
    pub display_name: String,
    pub file: PathBuf,
    /// The client's own name for the server.
    pub server_name: String,
}

/// Where a row comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A catalog entry.
    #[default]
    Catalog,
    /// Configured in a client and absent from every catalog: named and typed from that config.
    Client,
}

/// What a gallery entry needs before it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    /// Signing in (Patchbay runs the OAuth flow).
    Oauth,
    /// A secret for one or more `${VAR}`s (an API key).
    Secret,
    /// Nothing: it works as it is.
    Nothing,
}

/// A catalog entry not in use, as the window's "Add connector" view lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct GalleryEntry {
    pub name: String,
    pub title: String,
    pub description: Option<String>,
    pub transport: String,
    pub url: Option<String>,
    pub needs: Needs,
    /// The `${VAR}`s without a default it uses (what "a key" means for it).
    pub variables: Vec<String>,
    /// Its entry says `"enabled": false`; adding it re-enables it.
    pub disabled: bool,
}

/// The signals that put connectors in use, gathered by the core.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Catalog (or client-only) name → the client entries that configure it.
    pub found_in: BTreeMap<String, Vec<FoundIn>>,
    /// Rows that come from a client alone (not in any catalog).
    pub client_only: BTreeSet<String>,
    /// Connector name → where its stored credential came from.
    pub credential_source: BTreeMap<String, CredentialSource>,
    /// The client configs that could not be read (see [`StatusReport::client_errors`]).
    pub client_errors: Vec<String>,
}

impl GalleryEntry {
    pub fn of(entry: &ServerEntry) -> GalleryEntry {
        let mut variables: Vec<String> = entry
            .variable_uses()
            .into_iter()
            .filter(|u| !u.has_default)
            .map(|u| u.name)
            .collect();
        variables.dedup();
        let needs = if !variables.is_empty() {
            Needs::Secret
        } else if entry.is_oauth_capable() {
            Needs::Oauth
        } else {
            Needs::Nothing
        };
        GalleryEntry {
            name: entry.name.0.clone(),
            title: entry.display_title().to_owned(),
            description: entry.description.clone(),
            transport: entry.transport.display_name().to_owned(),
            url: entry.transport.url().map(str::to_owned),
            needs,
            variables,
            disabled: entry.enabled == Some(false),
        }
    }
}

impl StatusReport {
    /// Keeps in `connectors` only the rows in use (each with why, where it was found and where
    /// its credential came from), moves the rest of the catalog to `gallery`, and counts again.
    /// An invalid entry is in use when its file is the user's (the default catalog's own
    /// mistakes are not the user's business).
    pub fn apply_usage(&mut self, catalog: &Catalog, usage: &Usage) {
        self.client_errors = usage.client_errors.clone();
        let kinds: HashMap<PathBuf, SourceKind> = catalog
            .sources
            .iter()
            .map(|s| (s.path.clone(), s.kind))
            .collect();
        let entries: HashMap<&str, &CatalogItem> = catalog
            .items
            .iter()
            .map(|i| (i.name().as_str(), i))
            .collect();
        let rows = std::mem::take(&mut self.connectors);
        let mut gallery = Vec::new();
        for mut row in rows {
            let item = entries.get(row.name.as_str()).copied();
            let (kind, enabled) = match item {
                Some(CatalogItem::Server(e)) => (kinds.get(&e.source).copied(), e.enabled),
                Some(CatalogItem::Invalid(i)) => (kinds.get(&i.source).copied(), None),
                None => (None, None),
            };
            let client_only = usage.client_only.contains(&row.name);
            let mut because = Vec::new();
            if enabled == Some(true) {
                because.push(InUseReason::Enabled);
            }
            match kind {
                Some(SourceKind::User) => because.push(InUseReason::UserCatalog),
                Some(SourceKind::Explicit) => because.push(InUseReason::ExplicitCatalog),
                _ => {}
            }
            row.found_in = usage.found_in.get(&row.name).cloned().unwrap_or_default();
            if !row.found_in.is_empty() || client_only {
                because.push(InUseReason::Client);
            }
            if row.credential.is_some() {
                because.push(InUseReason::Credential);
            }
            if enabled == Some(false) {
                because.clear();
            }
            row.origin = if client_only {
                Origin::Client
            } else {
                Origin::Catalog
            };
            row.credential_source = row.credential.as_ref().map(|_| {
                usage
                    .credential_source
                    .get(&row.name)
                    .copied()
                    .unwrap_or(CredentialSource::Patchbay)
            });
            row.in_use_because = because;
            if !row.in_use_because.is_empty() {
                self.connectors.push(row);
            } else if let Some(CatalogItem::Server(entry)) = item {
                gallery.push(GalleryEntry::of(entry));
            }
        }
        gallery.sort_by(|a, b| {
            a.title
                .to_lowercase()
                .cmp(&b.title.to_lowercase())
                .then_with(|| a.name.cmp(&b.name))
        });
        self.gallery = gallery;
        self.recount();
    }

    /// The counts after rows were added, removed or marked.
    pub(crate) fn recount(&mut self) {
        sort_rows(&mut self.connectors);
        self.need_attention = self.connectors.iter().filter(|c| c.needs_attention).count();
        self.worst = self.connectors.first().map(|c| c.state);
        self.degraded = self
            .connectors
            .iter()
            .filter(|c| c.degraded.is_some())
            .count();
    }
}
