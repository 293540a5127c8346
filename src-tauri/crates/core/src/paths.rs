//! Where Patchbay keeps its data: the platform's directories (XDG on Linux), or one directory
//! named by `PATCHBAY_DATA_DIR` / `--data-dir` so tests never touch the real home.

use crate::CoreError;
use patchbay_catalog::CatalogSource;
use std::path::PathBuf;

/// The environment variable that moves all of Patchbay's files into one directory.
pub const DATA_DIR_ENV: &str = "PATCHBAY_DATA_DIR";

#[derive(Debug, Clone)]
pub struct Paths {
    /// Holds the user catalog (`mcp.json`).
    pub config_dir: PathBuf,
    /// Holds the database.
    pub data_dir: PathBuf,
    /// The shipped catalog: a file when one is installed or in the source tree, else the built-in copy.
    pub default_catalog: CatalogSource,
    /// A `--catalog FILE` used alone instead of default + user.
    pub catalog_override: Option<PathBuf>,
    /// The keychain account of the vault's master key; distinct per data directory.
    pub keychain_account: String,
}

/// The keychain service every Patchbay item is filed under.
pub const KEYCHAIN_SERVICE: &str = "Patchbay";

/// Names a default catalog file to use instead of the installed or built-in one.
pub const DEFAULT_CATALOG_ENV: &str = "PATCHBAY_DEFAULT_CATALOG";

/// The master key's keychain account on the platform's own directories.
const DEFAULT_KEYCHAIN_ACCOUNT: &str = "vault-master-key";

const DATABASE_FILE: &str = "patchbay.sqlite3";
const USER_CATALOG_FILE: &str = "mcp.json";

impl Paths {
    /// Everything under `dir` (`config/`, `data/`) with the shipped catalog embedded and the
    /// keychain account `test`: a throwaway home for tests and benchmarks.
    pub fn under(dir: &std::path::Path) -> Paths {
        Paths {
            config_dir: dir.join("config"),
            data_dir: dir.join("data"),
            default_catalog: CatalogSource::Embedded,
            catalog_override: None,
            keychain_account: "test".into(),
        }
    }

    /// `--data-dir` first, then `PATCHBAY_DATA_DIR`, then the platform's directories.
    pub fn resolve(data_dir_override: Option<PathBuf>) -> Result<Paths, CoreError> {
        let from_env = std::env::var_os(DATA_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let (config_dir, data_dir, keychain_account) = match data_dir_override.or(from_env) {
            Some(dir) => {
                let dir = absolute(dir)?;
                let account = format!("vault-master-key-{}", short_hash(&dir));
                (dir.clone(), dir, account)
            }
            None => {
                let dirs = directories::ProjectDirs::from("dev", "patchbay", "Patchbay")
                    .ok_or(CoreError::NoHome)?;
                (
                    dirs.config_dir().to_path_buf(),
                    dirs.data_dir().to_path_buf(),
                    DEFAULT_KEYCHAIN_ACCOUNT.to_owned(),
                )
            }
        };
        Ok(Paths {
            config_dir,
            data_dir,
            default_catalog: default_catalog(),
            catalog_override: None,
            keychain_account,
        })
    }

    /// The global options another `patchbay` (one a client launches, with an environment of its
    /// own) needs to find these same files: `--data-dir DIR` when they are not the platform's
    /// default directories, `--catalog FILE` when one catalog is used alone.
    pub fn launch_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        // Only a named directory has an account of its own (see `resolve`).
        if self.keychain_account != DEFAULT_KEYCHAIN_ACCOUNT {
            args.push("--data-dir".to_owned());
            args.push(self.data_dir.to_string_lossy().into_owned());
        }
        if let Some(file) = &self.catalog_override {
            args.push("--catalog".to_owned());
            args.push(file.to_string_lossy().into_owned());
        }
        args
    }

    /// Use `file` alone instead of the default and user catalogs.
    pub fn with_catalog_override(mut self, file: Option<PathBuf>) -> Result<Paths, CoreError> {
        self.catalog_override = file.map(absolute).transpose()?;
        Ok(self)
    }

    pub fn user_catalog(&self) -> PathBuf {
        self.config_dir.join(USER_CATALOG_FILE)
    }

    /// The user's pre-registered OAuth clients (`oauth-clients.json`), beside the user catalog.
    pub fn oauth_clients_file(&self) -> PathBuf {
        self.config_dir.join(patchbay_oauth::CLIENTS_FILE)
    }

    pub fn database(&self) -> PathBuf {
        self.data_dir.join(DATABASE_FILE)
    }

    /// The catalog layers in merge order.
    pub fn catalog_sources(&self) -> Vec<CatalogSource> {
        if let Some(file) = &self.catalog_override {
            return vec![CatalogSource::File {
                path: file.clone(),
                kind: SourceKind::Explicit,
                required: true,
            }];
        }
        vec![
            self.default_catalog.clone(),
            CatalogSource::File {
                path: self.user_catalog(),
                kind: SourceKind::User,
                required: false,
            },
        ]
    }

    /// The catalog files to watch (the built-in copy cannot change).
    pub fn catalog_files(&self) -> Vec<PathBuf> {
        self.catalog_sources()
            .into_iter()
            .filter_map(|s| match s {
                CatalogSource::File { path, .. } => Some(path),
                CatalogSource::Embedded => None,
            })
            .collect()
    }
}

use patchbay_catalog::SourceKind;

/// The shipped catalog: `PATCHBAY_DEFAULT_CATALOG`, else an installed copy beside the binary,
/// else the source tree's (a development build), else the copy compiled in.
fn default_catalog() -> CatalogSource {
    let file = |path: PathBuf| CatalogSource::File {
        path,
        kind: SourceKind::Default,
        required: true,
    };
    if let Some(path) = std::env::var_os(DEFAULT_CATALOG_ENV).filter(|v| !v.is_empty()) {
        return file(PathBuf::from(path));
    }
    let mut candidates = Vec::new();
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
    {
        candidates.push(exe_dir.join("../share/patchbay/mcp.json"));
        candidates.push(exe_dir.join("catalog/mcp.json"));
    }
    candidates.push(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../catalog/mcp.json"
    )));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
        .map(without_verbatim_prefix)
        .map(file)
        .unwrap_or(CatalogSource::Embedded)
}

/// `canonicalize` answers a verbatim path on Windows (`\\?\C:\...`); the plain drive form means
/// the same for a path this short, and it is what users see and what status reports as a source.
fn without_verbatim_prefix(path: PathBuf) -> PathBuf {
    if cfg!(windows) {
        if let Some(rest) = path.to_str().and_then(|t| t.strip_prefix(r"\\?\")) {
            if rest.len() < 260 && rest.as_bytes().get(1) == Some(&b':') {
                return PathBuf::from(rest);
            }
        }
    }
    path
}

fn absolute(path: PathBuf) -> Result<PathBuf, CoreError> {
    std::path::absolute(&path).map_err(|e| CoreError::io("make absolute", &path, e))
}

fn short_hash(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(path.to_string_lossy().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `dir` and its missing parents readable by their owner only (0700 on unix, whatever
/// the umask would give): locks, databases and catalogs are nobody else's business. A
/// directory that exists keeps its mode.
pub use patchbay_vault::private::create_private_dir;

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_private_dir_and_its_new_parents_are_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/locks");
        create_private_dir(&dir).unwrap();
        for d in [root.path().join("a"), root.path().join("a/b"), dir.clone()] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        // Again: an existing directory is fine.
        create_private_dir(&dir).unwrap();
    }

    /// The user catalog Patchbay writes: a new one (and its new directory) the owner's only,
    /// an existing one keeping the mode its owner gave it.
    #[cfg(unix)]
    #[test]
    fn a_new_user_catalog_is_the_owners_only_and_an_old_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("config/patchbay/mcp.json");
        crate::user_catalog::atomic_write(&file, b"{}").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&root.path().join("config")), 0o700);
        assert_eq!(mode(&root.path().join("config/patchbay")), 0o700);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        crate::user_catalog::atomic_write(&file, b"{ }").unwrap();
        assert_eq!(mode(&file), 0o640);
    }

    #[test]
    fn an_override_keeps_everything_in_one_directory_with_its_own_keychain_item() {
        let a = Paths::resolve(Some(PathBuf::from("/tmp/pb-a"))).unwrap();
        let b = Paths::resolve(Some(PathBuf::from("/tmp/pb-b"))).unwrap();
        assert_eq!(a.database(), PathBuf::from("/tmp/pb-a/patchbay.sqlite3"));
        assert_eq!(a.user_catalog(), PathBuf::from("/tmp/pb-a/mcp.json"));
        assert_ne!(a.keychain_account, b.keychain_account);
        assert_ne!(a.keychain_account, "vault-master-key");
    }

    #[test]
    fn a_catalog_override_is_used_alone() {
        let paths = Paths::resolve(Some(PathBuf::from("/tmp/pb-c")))
            .unwrap()
            .with_catalog_override(Some(PathBuf::from("/tmp/only.json")))
            .unwrap();
        let sources = paths.catalog_sources();
        assert_eq!(sources.len(), 1);
        assert!(matches!(
            &sources[0],
            CatalogSource::File { kind: SourceKind::Explicit, required: true, path } if path == &PathBuf::from("/tmp/only.json")
        ));
    }
}
