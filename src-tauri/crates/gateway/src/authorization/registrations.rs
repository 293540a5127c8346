//! Clients registered with the gateway's authorization server (RFC 7591 dynamic registration):
//! public clients (no secret), kept in `gateway-oauth-clients.json` so a client's registration
//! outlives a gateway restart. Redirect URIs are checked at registration: `http` only on
//! loopback (RFC 8252 §7.3), `https`, or a private-use scheme with a dot in it (RFC 8252 §7.1,
//! `cursor://…`, `vscode://…`); never `javascript:`, `data:` or `file:`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file in the data directory.
pub const REGISTRATIONS_FILE: &str = "gateway-oauth-clients.json";

/// The most registrations kept; past it the oldest is forgotten (its client registers again).
pub const MAX_REGISTRATIONS: usize = 500;

/// A registered client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl Registration {
    /// The registration answer (RFC 7591 §3.2.1).
    pub fn answer(&self) -> Value {
        json!({
            "client_id": self.client_id,
            "client_id_issued_at": self.created_at.timestamp(),
            "client_name": self.client_name,
            "redirect_uris": self.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        })
    }
}

/// Why a registration is refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("redirect_uris must list at least one URI")]
    NoRedirect,
    #[error("redirect URI {0:?} is refused: http only on loopback (127.0.0.1, localhost, [::1]), https, or an app's own scheme")]
    BadRedirect(String),
    #[error("the gateway cannot keep the registration: {0}")]
    Store(String),
}

impl RegistrationError {
    /// The RFC 7591 error code.
    pub fn code(&self) -> &'static str {
        match self {
            RegistrationError::NoRedirect | RegistrationError::BadRedirect(_) => {
                "invalid_redirect_uri"
            }
            RegistrationError::Store(_) => "server_error",
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RegistrationsFile {
    clients: Vec<Registration>,
    #[serde(flatten)]
    other: serde_json::Map<String, Value>,
}

/// The registry over the file; the gateway's process is its only writer.
pub(crate) struct Registrations {
    path: PathBuf,
    cached: Mutex<Option<RegistrationsFile>>,
}

impl Registrations {
    pub(crate) fn new(data_dir: &Path) -> Registrations {
        Registrations {
            path: data_dir.join(REGISTRATIONS_FILE),
            cached: Mutex::new(None),
        }
    }

    /// Register the client `asked` describes.
    pub(crate) fn register(
        &self,
        asked: &Value,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Registration, RegistrationError> {
        let redirect_uris: Vec<String> = asked
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if redirect_uris.is_empty() {
            return Err(RegistrationError::NoRedirect);
        }
        if let Some(bad) = redirect_uris.iter().find(|u| !acceptable_redirect(u)) {
            return Err(RegistrationError::BadRedirect(bad.clone()));
        }
        let client_name = asked
            .get("client_name")
            .and_then(Value::as_str)
            .map(|n| n.trim().chars().take(80).collect::<String>())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "An unnamed client".into());
        let mut random = [0u8; 16];
        getrandom::getrandom(&mut random).map_err(|e| RegistrationError::Store(e.to_string()))?;
        let registration = Registration {
            client_id: format!("pbdcr_{}", crate::clients::hex(&random)),
            client_name,
            redirect_uris,
            created_at: now,
        };
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        let file = load(&self.path, &mut cached);
        file.clients.push(registration.clone());
        let excess = file.clients.len().saturating_sub(MAX_REGISTRATIONS);
        file.clients.drain(..excess);
        let text = serde_json::to_string_pretty(&*file).expect("plain JSON") + "\n";
        crate::clients::write_private(&self.path, &text)
            .map_err(|e| RegistrationError::Store(format!("{}: {e}", self.path.display())))?;
        Ok(registration)
    }

    /// The registration of `client_id`.
    pub(crate) fn find(&self, client_id: &str) -> Option<Registration> {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        load(&self.path, &mut cached)
            .clients
            .iter()
            .find(|c| c.client_id == client_id)
            .cloned()
    }
}

/// The file, read once. One that cannot be read is taken as empty (its clients register again)
/// and said; it is replaced only by the next registration.
fn load<'a>(path: &Path, cached: &'a mut Option<RegistrationsFile>) -> &'a mut RegistrationsFile {
    cached.get_or_insert_with(|| match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!(
                "{} is not a registrations file ({e}); its clients register again",
                path.display()
            );
            RegistrationsFile::default()
        }),
        Err(_) => RegistrationsFile::default(),
    })
}

/// A redirect URI a client may name (see the module docs); a metadata document's too.
pub(super) fn acceptable_redirect(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if url.fragment().is_some() {
        return false;
    }
    match url.scheme() {
        "http" => patchbay_catalog::own_gateway::is_loopback_host(url.host()),
        "https" => url.host().is_some(),
        "javascript" | "data" | "file" | "blob" | "about" | "vbscript" | "ftp" | "ws" | "wss" => {
            false
        }
        // RFC 8252 §7.1: a private-use scheme is a reverse domain name (cursor, vscode, … are
        // accepted too: the desktop apps that use them are the user's own).
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_go_to_loopback_https_or_an_apps_own_scheme() {
        for ok in [
            "http://localhost:33418/callback",
            "http://127.0.0.1:5173/oauth/callback",
            "http://[::1]:8080/cb",
            "https://vscode.dev/redirect",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
        ] {
            assert!(acceptable_redirect(ok), "{ok}");
        }
        for bad in [
            "http://evil.example/cb",
            "http://192.168.1.2:80/cb",
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "http://localhost/cb#frag",
            "not a uri",
        ] {
            assert!(!acceptable_redirect(bad), "{bad}");
        }
    }

    #[test]
    fn registrations_outlive_the_registry_and_stay_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let now = chrono::Utc::now();
        let registry = Registrations::new(dir.path());
        let first = registry
            .register(
                &json!({ "client_name": "Claude Code", "redirect_uris": ["http://localhost:1/cb"] }),
                now,
            )
            .unwrap();
        assert!(first.client_id.starts_with("pbdcr_"));
        assert_eq!(
            Registrations::new(dir.path()).find(&first.client_id),
            Some(first.clone())
        );
        assert!(matches!(
            registry.register(&json!({ "redirect_uris": [] }), now),
            Err(RegistrationError::NoRedirect)
        ));
        assert!(matches!(
            registry.register(&json!({ "redirect_uris": ["http://evil.example/"] }), now),
            Err(RegistrationError::BadRedirect(_))
        ));
        for _ in 0..MAX_REGISTRATIONS {
            registry
                .register(&json!({ "redirect_uris": ["http://localhost:2/cb"] }), now)
                .unwrap();
        }
        // The oldest went to make room.
        assert_eq!(registry.find(&first.client_id), None);
        let kept: RegistrationsFile = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(REGISTRATIONS_FILE)).unwrap(),
        )
        .unwrap();
        assert_eq!(kept.clients.len(), MAX_REGISTRATIONS);
    }
}
