//! The clients allowed through the gateway. Each has a label, a secret Patchbay mints once and
//! prints once (the client sends it as `Authorization: Bearer <secret>` or
//! `X-Patchbay-Client: <secret>`), and optionally the only connectors it may reach. Only the
//! SHA-256 of the secret is kept, in `gateway-clients.json` in the data directory (written via
//! temp + fsync + rename); the gateway re-reads the file when it changes, so `client add` and
//! `client revoke` take effect on a running gateway.
//!
//! A client can also be authorized in the browser (the gateway as an OAuth authorization server,
//! `authorization`): its record is the same, with an [`OAuthGrant`] beside it. Its secret is then
//! an access token that lapses ([`ACCESS_TOKEN_LIFETIME`]) and is renewed with a refresh token
//! (hashed too), which rotates at every renewal. Listing and revoking treat both kinds alike.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The file in the data directory.
pub const CLIENTS_FILE: &str = "gateway-clients.json";

/// Every minted secret starts with this, so one found in a config file is recognizable.
pub const SECRET_PREFIX: &str = "pbgw_";

/// Every refresh token starts with this (never accepted as an access token: the prefixes differ).
pub const REFRESH_PREFIX: &str = "pbgwr_";

/// How long an access token issued in the browser flow works before it is renewed.
pub const ACCESS_TOKEN_LIFETIME: chrono::Duration = chrono::Duration::hours(1);

/// How long a rotated-out refresh token is still honoured: a renewal whose answer was lost on its
/// way to the client must not cost the user a new consent.
pub const REFRESH_REUSE_GRACE: chrono::Duration = chrono::Duration::minutes(2);

/// The header a client may send its secret in when its `Authorization` is taken.
pub const CLIENT_HEADER: &str = "x-patchbay-client";

#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a gateway clients file: {detail}")]
    Malformed { path: String, detail: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "a gateway client labelled \"{0}\" exists already; revoke it first or pick another label"
    )]
    Exists(String),
    #[error("no gateway client is labelled \"{0}\"")]
    NoSuchClient(String),
    #[error("a label is 1 to 64 letters, digits, '-', '_' or '.'; \"{0}\" is not")]
    BadLabel(String),
    #[error("cannot draw a random secret: {0}")]
    Random(String),
}

/// A client as stored (no secret, only its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    pub label: String,
    /// Hex SHA-256 of the secret.
    pub secret_sha256: String,
    /// The only connectors it may reach; `None`: every connector in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Set for a client authorized in the browser: its secret is an access token that lapses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthGrant>,
}

/// What a client authorized in the browser holds beside its access token (hashes only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrant {
    /// Its OAuth client id: one the gateway registered, or its metadata document's URL.
    pub client_id: String,
    /// The name it gave itself (shown on the consent page and in the list).
    pub client_name: String,
    /// When the access token (the record's secret) stops working.
    pub access_expires_at: chrono::DateTime<chrono::Utc>,
    /// Hex SHA-256 of the current refresh token.
    pub refresh_sha256: String,
    /// The refresh token the last renewal replaced, honoured until `previous_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_refresh_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_until: Option<chrono::DateTime<chrono::Utc>>,
}

/// What a consent grants: who, and what it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consent {
    pub client_id: String,
    pub client_name: String,
    /// `None`: every connector in use, now and later.
    pub only: Option<Vec<String>>,
}

/// A pair just issued: shown to the client once, never stored.
#[derive(Debug)]
pub struct IssuedTokens {
    pub record: ClientRecord,
    pub access_token: patchbay_vault::Secret,
    pub refresh_token: patchbay_vault::Secret,
}

impl ClientRecord {
    /// Whether this client may reach `connector`.
    pub fn allows(&self, connector: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|c| c == connector))
    }

    /// Whether its secret works at `now` (a browser-authorized client's access token lapses).
    fn usable_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.oauth
            .as_ref()
            .is_none_or(|grant| grant.access_expires_at > now)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ClientsFile {
    clients: Vec<ClientRecord>,
    /// Keys this version does not know, kept as they were.
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// A file's modification time and length (`None`: no file).
type Stamp = Option<(SystemTime, u64)>;

/// The registry over `gateway-clients.json`. `Send + Sync`.
pub struct Clients {
    path: PathBuf,
    /// The file as last read, with its modification time and length.
    cached: Mutex<Option<(Stamp, Vec<ClientRecord>)>>,
}

impl Clients {
    pub fn new(data_dir: &Path) -> Clients {
        Clients {
            path: data_dir.join(CLIENTS_FILE),
            cached: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every client, by label order of creation.
    pub fn list(&self) -> Result<Vec<ClientRecord>, ClientsError> {
        Ok(self.read()?.clients)
    }

    /// Mint a secret for a new client `label`, limited to `only` when given. Returns the
    /// record and the secret (shown once; never stored).
    pub fn add(
        &self,
        label: &str,
        only: Option<Vec<String>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(ClientRecord, patchbay_vault::Secret), ClientsError> {
        if !valid_label(label) {
            return Err(ClientsError::BadLabel(label.to_owned()));
        }
        let mut file = self.read()?;
        if file.clients.iter().any(|c| c.label == label) {
            return Err(ClientsError::Exists(label.to_owned()));
        }
        let secret = mint(SECRET_PREFIX)?;
        let record = ClientRecord {
            label: label.to_owned(),
            secret_sha256: sha256_hex(secret.expose()),
            only,
            created_at: now,
            oauth: None,
        };
        file.clients.push(record.clone());
        self.write(&file)?;
        Ok((record, secret))
    }

    /// Forget `label`: its secret stops working at once.
    pub fn revoke(&self, label: &str) -> Result<(), ClientsError> {
        let mut file = self.read()?;
        let before = file.clients.len();
        file.clients.retain(|c| c.label != label);
        if file.clients.len() == before {
            return Err(ClientsError::NoSuchClient(label.to_owned()));
        }
        self.write(&file)
    }

    /// Record a consent given in the browser: a new access token and refresh token for it. A
    /// client id that was granted before keeps its label and loses its old tokens (one record per
    /// client: authorizing again replaces, never piles up).
    pub fn grant(
        &self,
        consent: &Consent,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<IssuedTokens, ClientsError> {
        let mut file = self.read()?;
        let earlier = file.clients.iter().position(|c| {
            c.oauth
                .as_ref()
                .is_some_and(|g| g.client_id == consent.client_id)
        });
        let label = match earlier {
            Some(i) => file.clients.remove(i).label,
            None => free_label(&file.clients, &consent.client_name),
        };
        let (grant, access_token, refresh_token) =
            fresh_grant(&consent.client_id, &consent.client_name, now)?;
        let record = ClientRecord {
            label,
            secret_sha256: sha256_hex(access_token.expose()),
            only: consent.only.clone(),
            created_at: now,
            oauth: Some(grant),
        };
        file.clients.push(record.clone());
        self.write(&file)?;
        Ok(IssuedTokens {
            record,
            access_token,
            refresh_token,
        })
    }

    /// Renew the browser-authorized client `client_id` that presents `refresh_token`: a new pair,
    /// the presented one honoured a little longer ([`REFRESH_REUSE_GRACE`]). `None`: no such
    /// token for that client (revoked, rotated out long ago, or never issued).
    pub fn renew(
        &self,
        client_id: &str,
        refresh_token: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<IssuedTokens>, ClientsError> {
        if !refresh_token.starts_with(REFRESH_PREFIX) {
            return Ok(None);
        }
        let hash = sha256_hex(refresh_token);
        let mut file = self.read()?;
        let Some(record) = file.clients.iter_mut().find(|c| {
            c.oauth.as_ref().is_some_and(|g| {
                g.client_id == client_id
                    && (g.refresh_sha256 == hash
                        || (g.previous_refresh_sha256.as_deref() == Some(hash.as_str())
                            && g.previous_until.is_some_and(|until| until > now)))
            })
        }) else {
            return Ok(None);
        };
        let old = record.oauth.take().expect("found by its grant");
        let (mut grant, access_token, new_refresh) =
            fresh_grant(&old.client_id, &old.client_name, now)?;
        // The token presented stays good for a moment, whichever it was: its answer may be lost.
        grant.previous_refresh_sha256 = Some(hash);
        grant.previous_until = Some(now + REFRESH_REUSE_GRACE);
        record.secret_sha256 = sha256_hex(access_token.expose());
        record.oauth = Some(grant);
        let record = record.clone();
        self.write(&file)?;
        Ok(Some(IssuedTokens {
            record,
            access_token,
            refresh_token: new_refresh,
        }))
    }

    /// Forget the client whose access or refresh token is `token` (RFC 7009 revocation: an
    /// unknown token is not an error). Whether one was forgotten.
    pub fn revoke_token(&self, token: &str) -> Result<bool, ClientsError> {
        let hash = sha256_hex(token);
        let mut file = self.read()?;
        let before = file.clients.len();
        file.clients.retain(|c| {
            let refresh = c.oauth.as_ref().is_some_and(|g| {
                g.refresh_sha256 == hash || g.previous_refresh_sha256.as_deref() == Some(&hash)
            });
            !(refresh || (c.oauth.is_some() && c.secret_sha256 == hash))
        });
        if file.clients.len() == before {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }

    /// The client whose secret is `presented`, when there is one. Re-reads the file only when
    /// its modification time or length changed.
    pub fn authenticate(&self, presented: &str) -> Result<Option<ClientRecord>, ClientsError> {
        self.authenticate_at(presented, chrono::Utc::now())
    }

    /// [`Clients::authenticate`] at `now` (a browser-authorized client's token lapses).
    pub fn authenticate_at(
        &self,
        presented: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<ClientRecord>, ClientsError> {
        if !presented.starts_with(SECRET_PREFIX) {
            return Ok(None);
        }
        let hash = sha256_hex(presented);
        let stamp = stamp(&self.path);
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = matches!(&*cached, Some((s, _)) if *s == stamp);
        if !fresh {
            let clients = self.read()?.clients;
            *cached = Some((stamp, clients));
        }
        let clients = &cached.as_ref().expect("filled above").1;
        Ok(clients
            .iter()
            .find(|c| c.secret_sha256 == hash && c.usable_at(now))
            .cloned())
    }

    fn read(&self) -> Result<ClientsFile, ClientsError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ClientsFile::default()),
            Err(source) => {
                return Err(ClientsError::Read {
                    path: self.path.display().to_string(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| ClientsError::Malformed {
            path: self.path.display().to_string(),
            detail: e.to_string(),
        })
    }

    fn write(&self, file: &ClientsFile) -> Result<(), ClientsError> {
        let text = serde_json::to_string_pretty(file).expect("plain JSON") + "\n";
        write_private(&self.path, &text).map_err(|source| ClientsError::Write {
            path: self.path.display().to_string(),
            source,
        })?;
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A label for a client that named itself `name` (any text): its letters and digits, `-`
/// between words, numbered when another client has it already.
fn free_label(clients: &[ClientRecord], name: &str) -> String {
    let mut base = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
            base.push(c);
        } else if !base.is_empty() && !base.ends_with('-') {
            base.push('-');
        }
    }
    let mut base = base.trim_end_matches('-').to_owned();
    base.truncate(48);
    if base.is_empty() {
        base = "oauth-client".into();
    }
    let taken = |label: &str| clients.iter().any(|c| c.label == label);
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|label| !taken(label))
        .expect("some number is free")
}

/// A new access token and refresh token for `client_id`, and the grant holding their hashes.
fn fresh_grant(
    client_id: &str,
    client_name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(OAuthGrant, patchbay_vault::Secret, patchbay_vault::Secret), ClientsError> {
    let access = mint(SECRET_PREFIX)?;
    let refresh = mint(REFRESH_PREFIX)?;
    let grant = OAuthGrant {
        client_id: client_id.to_owned(),
        client_name: client_name.to_owned(),
        access_expires_at: now + ACCESS_TOKEN_LIFETIME,
        refresh_sha256: sha256_hex(refresh.expose()),
        previous_refresh_sha256: None,
        previous_until: None,
    };
    Ok((grant, access, refresh))
}

/// 256 random bits, hex, after `prefix`.
fn mint(prefix: &str) -> Result<patchbay_vault::Secret, ClientsError> {
    let mut random = [0u8; 32];
    getrandom::getrandom(&mut random).map_err(|e| ClientsError::Random(e.to_string()))?;
    Ok(patchbay_vault::Secret::new(format!(
        "{prefix}{}",
        hex(&random)
    )))
}

/// Write `text` to `path` whole or not at all (temp + fsync + rename), readable by its owner
/// only (it holds hashes, but no need to share them), creating its directory owner-only.
pub(crate) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    patchbay_vault::private::create_private_dir(dir)?;
    let mut random = [0u8; 8];
    getrandom::getrandom(&mut random).map_err(std::io::Error::other)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", hex(&random)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

pub(crate) fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14: the clients file (secrets' hashes) and the directory it creates are the
    /// owner's only.
    #[cfg(unix)]
    #[test]
    fn the_clients_file_and_its_directory_are_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let clients = Clients::new(&data);
        clients.add("cursor", None, chrono::Utc::now()).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join(CLIENTS_FILE)), 0o600);
    }

    #[test]
    fn minted_secrets_authenticate_until_revoked_and_only_their_hash_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let clients = Clients::new(dir.path());
        let now = chrono::Utc::now();
        let (cursor, secret) = clients.add("cursor", None, now).unwrap();
        let (_, limited) = clients
            .add("vscode", Some(vec!["linear".into()]), now)
            .unwrap();
        assert!(secret.expose().starts_with(SECRET_PREFIX));
        let stored = std::fs::read_to_string(clients.path()).unwrap();
        assert!(!stored.contains(secret.expose()) && !stored.contains(limited.expose()));

        let found = clients.authenticate(secret.expose()).unwrap().unwrap();
        assert_eq!(found, cursor);
        assert!(found.allows("anything"));
        let found = clients.authenticate(limited.expose()).unwrap().unwrap();
        assert!(found.allows("linear") && !found.allows("github"));
        assert!(clients.authenticate("pbgw_nope").unwrap().is_none());
        assert!(matches!(
            clients.add("cursor", None, now),
            Err(ClientsError::Exists(_))
        ));
        assert!(matches!(
            clients.add("has space", None, now),
            Err(ClientsError::BadLabel(_))
        ));

        // Another process (the CLI) revokes: the registry sees it on the next request.
        Clients::new(dir.path()).revoke("cursor").unwrap();
        assert!(clients.authenticate(secret.expose()).unwrap().is_none());
        assert!(clients.authenticate(limited.expose()).unwrap().is_some());
        assert!(matches!(
            clients.revoke("cursor"),
            Err(ClientsError::NoSuchClient(_))
        ));
    }

    #[test]
    fn a_browser_grant_lapses_renews_once_per_refresh_token_and_revokes() {
        let dir = tempfile::tempdir().unwrap();
        let clients = Clients::new(dir.path());
        let now = chrono::Utc::now();
        let consent = Consent {
            client_id: "pbdcr_1".into(),
            client_name: "Claude Code".into(),
            only: Some(vec!["notion".into()]),
        };
        let first = clients.grant(&consent, now).unwrap();
        assert_eq!(first.record.label, "claude-code");
        let access = first.access_token.expose().to_owned();
        assert!(clients.authenticate_at(&access, now).unwrap().is_some());
        // The access token lapses; the refresh token is no access token.
        let later = now + ACCESS_TOKEN_LIFETIME + chrono::Duration::seconds(1);
        assert!(clients.authenticate_at(&access, later).unwrap().is_none());
        let refresh = first.refresh_token.expose().to_owned();
        assert!(clients.authenticate_at(&refresh, now).unwrap().is_none());
        // Another client id cannot use it; its own renews and rotates.
        assert!(clients.renew("pbdcr_2", &refresh, later).unwrap().is_none());
        let second = clients.renew("pbdcr_1", &refresh, later).unwrap().unwrap();
        assert!(clients
            .authenticate_at(second.access_token.expose(), later)
            .unwrap()
            .is_some());
        assert!(clients.authenticate_at(&access, now).unwrap().is_none());
        // The rotated-out token works within the grace (a lost answer), not after it.
        assert!(clients.renew("pbdcr_1", &refresh, later).unwrap().is_some());
        let past = later + REFRESH_REUSE_GRACE + chrono::Duration::seconds(1);
        let third = clients
            .renew("pbdcr_1", second.refresh_token.expose(), past)
            .unwrap();
        assert!(third.is_none(), "the second pair was itself rotated out");
        // Authorizing again replaces the record (one per client), keeping its label.
        let again = clients.grant(&consent, past).unwrap();
        assert_eq!(again.record.label, "claude-code");
        assert_eq!(clients.list().unwrap().len(), 1);
        let stored = std::fs::read_to_string(clients.path()).unwrap();
        assert!(!stored.contains(again.refresh_token.expose()), "{stored}");
        assert!(clients.revoke_token(again.refresh_token.expose()).unwrap());
        assert!(clients
            .authenticate_at(again.access_token.expose(), past)
            .unwrap()
            .is_none());
    }
}
