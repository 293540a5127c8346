//! Core errors: what went wrong and where, never a secret value.

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("cannot find a home directory to keep Patchbay's data in; set PATCHBAY_DATA_DIR or pass --data-dir")]
    NoHome,
    #[error(transparent)]
    Vault(#[from] patchbay_vault::VaultError),
    /// No connector of that name where it was looked for (`looked_in`: "in the catalog", "in
    /// use", ...).
    #[error("no connector named \"{name}\" {looked_in}")]
    UnknownConnector { name: String, looked_in: String },
    /// The connector's catalog entry does not validate, so it cannot be changed or used.
    #[error("the catalog entry \"{name}\" is invalid; fix it before {doing}")]
    InvalidEntry { name: String, doing: &'static str },
    /// Patchbay holds no credential for the connector.
    #[error("no stored credential for the connector {connector}")]
    NoCredential { connector: String },
    /// No stored credential has that key, or one does and a connector claims it.
    #[error("no unclaimed credential has the key {key}")]
    NoUnclaimedCredential { key: String },
    /// No client entry bridges that URL to a connector in use.
    #[error("no connector in use has the URL {url} that \"{entry}\" bridges")]
    NoConnectorForUrl { url: String, entry: String },
    /// A paste-back arrived with no authorization of the connector pending.
    #[error(
        "no authorization of {connector} is pending (it expired or was finished); start it again"
    )]
    NoPendingAuthorization { connector: String },
    /// An authorization awaited by `wait_for` ended in an error (said by the flow).
    #[error("{message}")]
    AuthorizationFailed { connector: String, message: String },
    /// What was asked cannot be done to this connector as things stand; `why` says why and
    /// what to do instead.
    #[error("{why}")]
    Refused { connector: String, why: String },
    /// A runtime's config (Claude Code's, Codex's) already has a different server of that name.
    #[error("{runtime} already has a different server named {name}{}; nothing was changed", existing_note(.existing))]
    RuntimeConflict {
        runtime: &'static str,
        name: String,
        existing: Option<String>,
    },
    /// No home directory, so the agent runtimes' files cannot be found.
    #[error("no home directory: {purpose}")]
    NoRuntimeHome { purpose: &'static str },
    /// A file or directory could not be read, listed or changed.
    #[error("cannot {action} {}: {message}", .path.display())]
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        message: String,
    },
    /// A file's content is not what it must be (`message` says what and where in it).
    #[error("{}: {message}", .path.display())]
    BadFile {
        path: std::path::PathBuf,
        message: String,
    },
    /// A JSON file that does not parse, with where (compiler style, `path:line:column`).
    #[error("{}:{line}:{column}: not JSON: {message}", .path.display())]
    NotJson {
        path: std::path::PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A background task ended without its answer (it panicked or was cancelled).
    #[error("{task} failed: {message}")]
    TaskFailed { task: &'static str, message: String },
    /// An agent runtime's credential store or config.
    #[error(transparent)]
    Runtime(#[from] patchbay_runtimes::RuntimeError),
    /// Writing a credential through to the runtimes, or retiring it there.
    #[error(transparent)]
    Reconcile(#[from] patchbay_runtimes::reconcile::ReconcileError),
    /// An MCP client's config file (Cursor's, VS Code's, ...): reading or writing an entry.
    #[error(transparent)]
    ClientConfig(#[from] patchbay_runtimes::clients::write::WriteError),
    /// The connector cannot be authorized (not in the catalog, not an OAuth server, missing
    /// configuration).
    #[error("{0}")]
    NotAuthorizable(String),
    /// Text the user typed or pasted is not what was asked for.
    #[error("{0}")]
    InvalidInput(String),
    /// One field of a form is not acceptable (`field` as the form names it: `url`,
    /// `headers[1].name`); the window marks that field.
    #[error("{field}: {why}")]
    InvalidField { field: String, why: String },
    #[error(transparent)]
    OAuth(#[from] patchbay_oauth::OAuthError),
    #[error("no authorization of {connector} completed within {} seconds", .after.as_secs())]
    WaitTimedOut {
        connector: String,
        after: std::time::Duration,
    },
    #[error("cannot watch {path}: {message}")]
    Watch {
        path: std::path::PathBuf,
        message: String,
    },
    /// The connection check's health database (health.sqlite).
    #[error(transparent)]
    Health(#[from] patchbay_check::HealthError),
    /// Writing a checked transport back to a catalog file failed; the file is unchanged.
    #[error("cannot write {path}: {message}")]
    CatalogWrite {
        path: std::path::PathBuf,
        message: String,
    },
}

fn existing_note(existing: &Option<String>) -> String {
    existing
        .as_deref()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default()
}

impl CoreError {
    /// No connector `name` where `looked_in` says, with a "did you mean" when `catalog` has a
    /// name near it (a typo, another case).
    pub fn unknown_connector(
        catalog: &patchbay_catalog::Catalog,
        name: &str,
        looked_in: &str,
    ) -> CoreError {
        CoreError::UnknownConnector {
            name: name.to_owned(),
            looked_in: match catalog.did_you_mean(name) {
                Some(near) => format!("{looked_in}; did you mean \"{near}\"?"),
                None => looked_in.to_owned(),
            },
        }
    }

    /// The valid server entry `name` in `catalog`: `InvalidEntry` (saying it cannot be used for
    /// `doing`) when it does not validate, `UnknownConnector` (looked for `looked_in`, with a
    /// "did you mean") when there is none.
    pub fn server_entry<'c>(
        catalog: &'c patchbay_catalog::Catalog,
        name: &str,
        doing: &'static str,
        looked_in: &str,
    ) -> Result<&'c patchbay_catalog::ServerEntry, CoreError> {
        match catalog.get(name) {
            Some(patchbay_catalog::CatalogItem::Server(entry)) => Ok(entry),
            Some(patchbay_catalog::CatalogItem::Invalid(_)) => Err(CoreError::InvalidEntry {
                name: name.to_owned(),
                doing,
            }),
            None => Err(CoreError::unknown_connector(catalog, name, looked_in)),
        }
    }

    /// `cannot {action} {path}: {error}`.
    pub fn io(action: &'static str, path: &std::path::Path, error: std::io::Error) -> CoreError {
        CoreError::Io {
            action,
            path: path.to_path_buf(),
            message: error.to_string(),
        }
    }

    /// A stable machine-readable kind, for the window's `{ kind, message }` errors.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CoreError::NoHome | CoreError::NoRuntimeHome { .. } => ErrorKind::NoHome,
            CoreError::Vault(_) => ErrorKind::SecretStore,
            CoreError::UnknownConnector { .. } => ErrorKind::UnknownConnector,
            CoreError::InvalidEntry { .. } => ErrorKind::InvalidEntry,
            CoreError::NoCredential { .. } | CoreError::NoUnclaimedCredential { .. } => {
                ErrorKind::NoCredential
            }
            CoreError::NoConnectorForUrl { .. } => ErrorKind::UnknownConnector,
            CoreError::NoPendingAuthorization { .. } => ErrorKind::NotPending,
            CoreError::AuthorizationFailed { .. } => ErrorKind::Oauth,
            CoreError::Refused { .. } => ErrorKind::Refused,
            CoreError::RuntimeConflict { .. } => ErrorKind::Conflict,
            CoreError::Io { .. } => ErrorKind::Io,
            CoreError::BadFile { .. } | CoreError::NotJson { .. } => ErrorKind::BadFile,
            CoreError::TaskFailed { .. } => ErrorKind::Internal,
            CoreError::Runtime(_) | CoreError::Reconcile(_) => ErrorKind::RuntimeStore,
            CoreError::ClientConfig(_) => ErrorKind::ClientConfig,
            CoreError::NotAuthorizable(_) => ErrorKind::NotAuthorizable,
            CoreError::InvalidInput(_) | CoreError::InvalidField { .. } => ErrorKind::InvalidInput,
            CoreError::OAuth(patchbay_oauth::OAuthError::NoClient { .. }) => {
                ErrorKind::ClientNeeded
            }
            CoreError::OAuth(_) => ErrorKind::Oauth,
            CoreError::WaitTimedOut { .. } => ErrorKind::TimedOut,
            CoreError::Watch { .. } => ErrorKind::Watch,
            CoreError::Health(_) => ErrorKind::HealthStore,
            CoreError::CatalogWrite { .. } => ErrorKind::CatalogWrite,
        }
    }
}

/// What kind of error a command of the Connectors window failed with (the `kind` of
/// [`IpcError`]), serialized as its snake_case id. The window may branch on it (`conflict`
/// offers Replace); the message is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NoHome,
    SecretStore,
    /// No connector of that name (or URL) where it was looked for.
    UnknownConnector,
    /// Its catalog entry does not validate.
    InvalidEntry,
    /// No stored credential for it.
    NoCredential,
    /// No authorization of it is pending.
    NotPending,
    /// Refused as things stand (the message says why).
    Refused,
    /// A file or directory could not be read or changed.
    Io,
    /// A file's content is malformed.
    BadFile,
    /// A background task failed (a bug or a shutdown).
    Internal,
    /// An agent runtime's credential store or config.
    RuntimeStore,
    /// An MCP client's config file.
    ClientConfig,
    NotAuthorizable,
    InvalidInput,
    Oauth,
    /// The authorization server offers no way to register Patchbay: the user is asked for a
    /// client made at the provider ([`IpcError::needs_client`] says where).
    ClientNeeded,
    TimedOut,
    Watch,
    HealthStore,
    CatalogWrite,
    /// A client's or a runtime's config already has a different entry of that name.
    Conflict,
    /// The gateway's client registry could not be read or written.
    GatewayClients,
    /// Start at login could not be read or changed (the login entry, the OS's login items).
    LaunchAtLogin,
}

impl ErrorKind {
    /// The snake_case id, as serialized.
    pub fn id(self) -> &'static str {
        match self {
            ErrorKind::NoHome => "no_home",
            ErrorKind::SecretStore => "secret_store",
            ErrorKind::UnknownConnector => "unknown_connector",
            ErrorKind::InvalidEntry => "invalid_entry",
            ErrorKind::NoCredential => "no_credential",
            ErrorKind::NotPending => "not_pending",
            ErrorKind::Refused => "refused",
            ErrorKind::Io => "io",
            ErrorKind::BadFile => "bad_file",
            ErrorKind::Internal => "internal",
            ErrorKind::RuntimeStore => "runtime_store",
            ErrorKind::ClientConfig => "client_config",
            ErrorKind::NotAuthorizable => "not_authorizable",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::Oauth => "oauth",
            ErrorKind::ClientNeeded => "client_needed",
            ErrorKind::TimedOut => "timed_out",
            ErrorKind::Watch => "watch",
            ErrorKind::HealthStore => "health_store",
            ErrorKind::CatalogWrite => "catalog_write",
            ErrorKind::Conflict => "conflict",
            ErrorKind::GatewayClients => "gateway_clients",
            ErrorKind::LaunchAtLogin => "launch_at_login",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Compares with the snake_case id, so callers and tests can say `kind() == "no_home"`.
impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

/// What the Connectors window receives from a failed command: `{ "kind", "message" }`, an
/// English sentence and never a secret value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct IpcError {
    pub kind: ErrorKind,
    /// An English sentence for the user.
    pub message: String,
    /// With `client_needed`: the client to create at the provider, then enter with
    /// `enter_client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub needs_client: Option<crate::NeededClient>,
    /// With `invalid_input` from a form: the field the message is about (the message then
    /// leaves the field's name out).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub field: Option<String>,
}

impl IpcError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> IpcError {
        IpcError {
            kind,
            message: message.into(),
            needs_client: None,
            field: None,
        }
    }
}

impl From<CoreError> for IpcError {
    fn from(error: CoreError) -> IpcError {
        match error {
            // Said for the window, not the terminal the core's text points to.
            CoreError::OAuth(patchbay_oauth::OAuthError::NoClient {
                issuer,
                redirect_uri,
                ..
            }) => IpcError {
                kind: ErrorKind::ClientNeeded,
                message: format!(
                    "{issuer} offers no way to register Patchbay. Create an OAuth client there (a public client, with the redirect URI {redirect_uri}), then enter its client id here."
                ),
                needs_client: Some(crate::NeededClient {
                    issuer,
                    redirect_uri,
                }),
                field: None,
            },
            CoreError::InvalidField { field, why } => IpcError {
                field: Some(field),
                ..IpcError::new(ErrorKind::InvalidInput, why)
            },
            error => IpcError::new(error.kind(), error.to_string()),
        }
    }
}

impl From<crate::autostart::AutostartError> for IpcError {
    fn from(error: crate::autostart::AutostartError) -> IpcError {
        IpcError::new(ErrorKind::LaunchAtLogin, error.to_string())
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable() {
        assert_eq!(CoreError::NoHome.kind(), "no_home");
        let unknown = CoreError::UnknownConnector {
            name: "nope".into(),
            looked_in: "in the catalog".into(),
        };
        assert_eq!(
            (unknown.kind(), unknown.to_string().as_str()),
            (
                ErrorKind::UnknownConnector,
                "no connector named \"nope\" in the catalog"
            )
        );
        let conflict = CoreError::RuntimeConflict {
            runtime: "Claude Code",
            name: "notion".into(),
            existing: Some("https://other.example/mcp".into()),
        };
        assert_eq!(
            conflict.to_string(),
            "Claude Code already has a different server named notion (https://other.example/mcp); nothing was changed"
        );
        let io = CoreError::io(
            "list",
            std::path::Path::new("/x/mcp-remote"),
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(io.kind(), ErrorKind::Io);
        assert!(
            io.to_string().starts_with("cannot list /x/mcp-remote: "),
            "{io}"
        );
        let e = CoreError::NotAuthorizable("stdio cannot be authorized".into());
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (ErrorKind::NotAuthorizable, "stdio cannot be authorized")
        );
        assert_eq!(CoreError::InvalidInput("x".into()).kind(), "invalid_input");
        assert_eq!(
            CoreError::from(patchbay_oauth::OAuthError::UnknownState).kind(),
            "oauth"
        );
        let timed_out = CoreError::WaitTimedOut {
            connector: "n".into(),
            after: std::time::Duration::from_secs(1),
        };
        assert_eq!(timed_out.kind(), "timed_out");
    }

    #[test]
    fn the_window_is_asked_for_a_client_where_nothing_registers_patchbay() {
        let no_client = CoreError::from(patchbay_oauth::OAuthError::NoClient {
            server: "fx".into(),
            issuer: "https://auth.example".into(),
            redirect_uri: "http://127.0.0.1:3118/callback".into(),
            clients_file: "/home/u/.config/patchbay/oauth-clients.json".into(),
        });
        assert_eq!(no_client.kind(), "client_needed");
        let json = serde_json::to_value(IpcError::from(no_client)).unwrap();
        assert_eq!(json["kind"], "client_needed");
        assert_eq!(
            json["needs_client"],
            serde_json::json!({ "issuer": "https://auth.example", "redirect_uri": "http://127.0.0.1:3118/callback" })
        );
        let message = json["message"].as_str().unwrap();
        assert!(
            message.contains("http://127.0.0.1:3118/callback") && !message.contains("terminal"),
            "said for the window: {message}"
        );
        let other = serde_json::to_value(IpcError::from(CoreError::NoHome)).unwrap();
        assert!(other.get("needs_client").is_none(), "{other}");
    }

    #[test]
    fn every_kind_serializes_as_its_id_and_the_ipc_error_as_kind_and_message() {
        for kind in [
            ErrorKind::NoHome,
            ErrorKind::SecretStore,
            ErrorKind::UnknownConnector,
            ErrorKind::InvalidEntry,
            ErrorKind::NoCredential,
            ErrorKind::NotPending,
            ErrorKind::Refused,
            ErrorKind::Io,
            ErrorKind::BadFile,
            ErrorKind::Internal,
            ErrorKind::RuntimeStore,
            ErrorKind::ClientConfig,
            ErrorKind::NotAuthorizable,
            ErrorKind::InvalidInput,
            ErrorKind::Oauth,
            ErrorKind::TimedOut,
            ErrorKind::Watch,
            ErrorKind::HealthStore,
            ErrorKind::CatalogWrite,
            ErrorKind::Conflict,
            ErrorKind::GatewayClients,
            ErrorKind::LaunchAtLogin,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.id());
        }
        let e = IpcError::from(CoreError::NotAuthorizable("x cannot be authorized".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({ "kind": "not_authorizable", "message": "x cannot be authorized" })
        );
        // A form's field travels as data; the terminal's text still names it.
        let field = CoreError::InvalidField {
            field: "url".into(),
            why: "use https://".into(),
        };
        assert_eq!(field.to_string(), "url: use https://");
        assert_eq!(
            serde_json::to_value(IpcError::from(field)).unwrap(),
            serde_json::json!({ "kind": "invalid_input", "message": "use https://", "field": "url" })
        );
        let e = IpcError::from(crate::autostart::AutostartError::NoConfigDir {
            needs: "neither XDG_CONFIG_HOME nor HOME is set to an absolute path",
        });
        assert_eq!(e.kind, ErrorKind::LaunchAtLogin);
        assert_eq!(
            serde_json::to_value(&e).unwrap()["kind"],
            serde_json::json!("launch_at_login")
        );
        assert!(e.message.contains("XDG_CONFIG_HOME"), "{e}");
    }
}
