//! The clients allowed through the gateway. Each has a label, a secret Patchbay mints once and
//! prints once (the client sends it as `Authorization: Bearer <secret>` or
//! `X-Patchbay-Client: <secret>`), and optionally the only connectors it may reach. Only the
//! SHA-256 of the secret is kept, in `gateway-clients.json` in the data directory (written via
//! temp + fsync + rename); the gateway re-reads the file when it changes, so `client add` and
//! `client revoke` take effect on a running gateway.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The file in the data directory.
pub const CLIENTS_FILE: &str = "gateway-clients.json";

/// Every minted secret starts with this, so one found in a config file is recognizable.
pub const SECRET_PREFIX: &str = "pbgw_";

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
}

impl ClientRecord {
    /// Whether this client may reach `connector`.
    pub fn allows(&self, connector: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|c| c == connector))
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
        let valid = !label.is_empty()
            && label.len() <= 64
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(ClientsError::BadLabel(label.to_owned()));
        }
        let mut file = self.read()?;
        if file.clients.iter().any(|c| c.label == label) {
            return Err(ClientsError::Exists(label.to_owned()));
        }
        let mut random = [0u8; 32];
        getrandom::getrandom(&mut random).map_err(|e| ClientsError::Random(e.to_string()))?;
        let secret = patchbay_vault::Secret::new(format!("{SECRET_PREFIX}{}", hex(&random)));
        let record = ClientRecord {
            label: label.to_owned(),
            secret_sha256: sha256_hex(secret.expose()),
            only,
            created_at: now,
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

    /// The client whose secret is `presented`, when there is one. Re-reads the file only when
    /// its modification time or length changed.
    pub fn authenticate(&self, presented: &str) -> Result<Option<ClientRecord>, ClientsError> {
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
        Ok(clients.iter().find(|c| c.secret_sha256 == hash).cloned())
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
        use std::io::Write;
        let err = |source| ClientsError::Write {
            path: self.path.display().to_string(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        patchbay_vault::private::create_private_dir(dir).map_err(err)?;
        let text = serde_json::to_string_pretty(file).expect("plain JSON") + "\n";
        let mut tmp = tempfile_in(dir).map_err(err)?;
        tmp.1.write_all(text.as_bytes()).map_err(err)?;
        tmp.1.sync_all().map_err(err)?;
        std::fs::rename(&tmp.0, &self.path).map_err(err)?;
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

/// A new file beside the target, readable by its owner only (it holds hashes, but no need to
/// share them).
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut random = [0u8; 8];
    getrandom::getrandom(&mut random).map_err(std::io::Error::other)?;
    let path = dir.join(format!(".{CLIENTS_FILE}.{}.tmp", hex(&random)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(&path)?;
    Ok((path, file))
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
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
}
