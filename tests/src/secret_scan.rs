//! The end-to-end tests' secret scan (issue 14, "Secrets, everywhere"): after a flow, every
//! secret the loopback servers issued or were shown (access and refresh tokens, client secrets,
//! authorization codes, PKCE verifiers; tests/node/record-issued.mjs writes them down on the
//! server's side) and every secret the test itself knows (a gateway client's `pbgw_...`) is
//! looked for, as raw bytes, in:
//! - the data directory, recursively: SQLite files with their -wal/-shm, lock files, the gateway's
//!   clients file, the runtime homes the sandbox holds (Claude Code's and Codex's configs);
//! - every other file or directory the test names (client configs Patchbay edited elsewhere);
//! - the CLI's captured stdout and stderr (logs go to stderr; a panic's message too, so crash
//!   output is there), and any text the test hands over (the window's DOM).
//!
//! A few files exist to hold tokens: the runtimes' credential stores, where writing the token is
//! the bridge's whole job ([`RUNTIME_CREDENTIAL_FILES`]). They are skipped by name, each with its
//! reason, and the test may skip others the same way ([`SecretScan::excluding`]).
//!
//! It also checks the modes of Patchbay's own files under the data directory: directories 0700,
//! files 0600 ([`PATCHBAY_PRIVATE`]).
//!
//! A failure names the file (or output) and the secret's label, never the secret.

use std::path::{Path, PathBuf};
use std::process::Output;

/// Files holding tokens by design, skipped wherever they are found: (file name, why).
pub const RUNTIME_CREDENTIAL_FILES: &[(&str, &str)] = &[(
    ".credentials.json",
    "Claude Code's and Codex's own credential stores ($CLAUDE_CONFIG_DIR/.credentials.json, \
     $CODEX_HOME/.credentials.json): writing the runtime's token there is the bridge's job",
)];

/// Directories holding tokens by design, skipped wherever they are found: (name prefix, why).
pub const RUNTIME_CREDENTIAL_DIRS: &[(&str, &str)] = &[(
    "mcp-remote-",
    "mcp-remote's token store (~/.mcp-auth/mcp-remote-<version>/): Patchbay renews an adopted \
     mcp-remote credential as its client and writes the new token back there",
)];

/// Patchbay's own entries under the data directory and the mode each must have (unix):
/// (name, is a directory, mode). SQLite's -wal, -shm and -journal take their database's.
pub const PATCHBAY_PRIVATE: &[(&str, bool, u32)] = &[
    ("patchbay.sqlite3", false, 0o600),
    ("health.sqlite", false, 0o600),
    // The stdio bridges' calls on their way to health.sqlite (patchbay_check::spool).
    ("health.calls.jsonl", false, 0o600),
    ("gateway-clients.json", false, 0o600),
    ("locks", true, 0o700),
];

/// The secrets a flow issued or used, each with a label that says what it is.
#[derive(Default, Clone)]
pub struct Secrets {
    items: Vec<(String, String)>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Labels only: the values are the secrets.
        f.debug_list()
            .entries(self.items.iter().map(|(l, _)| l))
            .finish()
    }
}

/// Something that knows what secrets it issued or was shown (a loopback server).
pub trait Issuer {
    /// (label, value) pairs.
    fn issued(&self) -> Vec<(String, String)>;
}

impl Secrets {
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// Adds `value` as `label`; an empty or very short value (under 8 bytes: no secret, and it
    /// would match by chance) or one already known is left out.
    pub fn add(&mut self, label: impl Into<String>, value: impl AsRef<str>) -> &mut Secrets {
        let value = value.as_ref();
        if value.len() >= 8 && !self.items.iter().any(|(_, v)| v == value) {
            // Numbered when the label repeats: "access_token #2" is the second one issued.
            let label = label.into();
            let same = self
                .items
                .iter()
                .filter(|(l, _)| l == &label || l.starts_with(&format!("{label} #")))
                .count();
            let label = if same == 0 {
                label
            } else {
                format!("{label} #{}", same + 1)
            };
            self.items.push((label, value.to_owned()));
        }
        self
    }

    /// Every secret `issuer` recorded, labelled `who: <its label>`.
    pub fn issued_by(&mut self, who: &str, issuer: &impl Issuer) -> &mut Secrets {
        for (label, value) in issuer.issued() {
            self.add(format!("{who}: {label}"), value);
        }
        self
    }

    /// Another set's secrets.
    pub fn extend(&mut self, other: &Secrets) -> &mut Secrets {
        for (label, value) in &other.items {
            self.add(label.clone(), value);
        }
        self
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The labels (for a test asserting what was collected).
    pub fn labels(&self) -> Vec<&str> {
        self.items.iter().map(|(l, _)| l.as_str()).collect()
    }

    /// The labels of the secrets `haystack` holds, in any of the forms a secret is written in.
    pub fn found_in(&self, haystack: &[u8]) -> Vec<&str> {
        // std's substring search is compiled optimized even in a debug test build; the
        // replacement characters a lossy read puts in stand where no ASCII secret could.
        let text = String::from_utf8_lossy(haystack);
        self.items
            .iter()
            .filter(|(_, value)| forms(value).iter().any(|f| text.contains(f.as_str())))
            .map(|(label, _)| label.as_str())
            .collect()
    }
}

/// The forms a secret is written in: as is, percent-encoded (a URL, a form), with `/` escaped
/// as JSON may write it.
fn forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_owned()];
    let encoded: String = value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    if encoded != value {
        forms.push(encoded);
    }
    if value.contains('/') {
        forms.push(value.replace('/', "\\/"));
    }
    forms
}

impl Issuer for crate::sdk_servers::SdkServer {
    fn issued(&self) -> Vec<(String, String)> {
        read_issued_file(&self.issued_file())
    }
}

/// Reads what tests/node/record-issued.mjs wrote to `file` (one JSON {label, value} a line);
/// nothing when the file is missing (the server issued nothing).
pub fn read_issued_file(file: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| {
            Some((
                v["label"].as_str()?.to_owned(),
                v["value"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// tests/node/record-issued.mjs: `node --import <it>` records what the server issued into the
/// file named by [`ISSUED_ENV`].
pub fn record_issued_module() -> PathBuf {
    crate::sdk_servers::node_dir().join("record-issued.mjs")
}

/// The environment variable naming the file tests/node/record-issued.mjs appends to.
pub const ISSUED_ENV: &str = "PATCHBAY_E2E_ISSUED";

/// One scan: the secrets, where to look, what to skip. Build it, then [`assert_clean`].
///
/// [`assert_clean`]: SecretScan::assert_clean
pub struct SecretScan {
    secrets: Secrets,
    data_dir: PathBuf,
    places: Vec<PathBuf>,
    texts: Vec<(String, Vec<u8>)>,
    excluded: Vec<(PathBuf, String)>,
    /// Why a scan with no secret to look for is still a scan (modes only).
    none_issued: Option<String>,
    /// Patchbay made the data directory itself (not a sandbox's tempdir): it must be 0700.
    made_by_patchbay: bool,
}

/// A finding: where, and what (a secret's label, or a mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub place: String,
    pub what: String,
}

impl SecretScan {
    /// A scan of `data_dir` (the sandbox's path: Patchbay's data directory).
    pub fn new(data_dir: &Path) -> SecretScan {
        SecretScan {
            secrets: Secrets::new(),
            data_dir: data_dir.to_path_buf(),
            places: Vec::new(),
            texts: Vec::new(),
            excluded: Vec::new(),
            none_issued: None,
            made_by_patchbay: false,
        }
    }

    /// Patchbay created the data directory (it did not exist before the flow): it is checked
    /// to be 0700 too.
    pub fn data_dir_made_by_patchbay(mut self) -> SecretScan {
        self.made_by_patchbay = true;
        self
    }

    /// This flow issues no secret (`why`): the scan checks modes, and any secret added.
    /// Without it, a scan that has nothing to look for fails: a recorder that stopped
    /// recording must not pass for a flow with nothing leaked.
    pub fn none_issued(mut self, why: &str) -> SecretScan {
        self.none_issued = Some(why.to_owned());
        self
    }

    /// A secret the test knows (a gateway client's secret it was printed).
    pub fn secret(mut self, label: &str, value: impl AsRef<str>) -> SecretScan {
        self.secrets.add(label, value);
        self
    }

    /// The secret of a gateway client, from the headers `patchbay gateway client add --json`
    /// printed (`{"Authorization": "Bearer pbgw_..."}`): each value, and the bearer alone.
    pub fn gateway_client(mut self, label: &str, headers: &serde_json::Value) -> SecretScan {
        for value in headers
            .as_object()
            .into_iter()
            .flat_map(|h| h.values())
            .filter_map(|v| v.as_str())
        {
            let bare = value.strip_prefix("Bearer ").unwrap_or(value);
            self.secrets
                .add(format!("gateway client {label}'s secret"), bare);
        }
        self
    }

    /// Every secret `issuer` recorded.
    pub fn issued_by(mut self, who: &str, issuer: &impl Issuer) -> SecretScan {
        self.secrets.issued_by(who, issuer);
        self
    }

    pub fn secrets(mut self, secrets: &Secrets) -> SecretScan {
        self.secrets.extend(secrets);
        self
    }

    /// A file or directory (recursively) Patchbay wrote outside the data directory.
    pub fn place(mut self, path: impl AsRef<Path>) -> SecretScan {
        self.places.push(path.as_ref().to_path_buf());
        self
    }

    /// A process's captured stdout and stderr.
    pub fn output(mut self, label: &str, output: &Output) -> SecretScan {
        self.texts
            .push((format!("{label} (stdout)"), output.stdout.clone()));
        self.texts
            .push((format!("{label} (stderr)"), output.stderr.clone()));
        self
    }

    /// Any other text: a log, the window's DOM.
    pub fn text(mut self, label: &str, text: impl AsRef<[u8]>) -> SecretScan {
        self.texts.push((label.to_owned(), text.as_ref().to_vec()));
        self
    }

    /// Skips `path` (a file, or a directory and all below it) for `reason`, which must say why
    /// a secret belongs there.
    pub fn excluding(mut self, path: impl AsRef<Path>, reason: &str) -> SecretScan {
        assert!(!reason.trim().is_empty(), "an exclusion needs its reason");
        self.excluded
            .push((path.as_ref().to_path_buf(), reason.to_owned()));
        self
    }

    fn excluded(&self, path: &Path) -> Option<String> {
        if let Some((_, why)) = self.excluded.iter().find(|(p, _)| path.starts_with(p)) {
            return Some(why.clone());
        }
        let name = path.file_name()?.to_string_lossy();
        if let Some((_, why)) = RUNTIME_CREDENTIAL_FILES.iter().find(|(n, _)| name == *n) {
            return Some((*why).to_owned());
        }
        path.ancestors()
            .filter_map(|a| a.file_name())
            .find_map(|a| {
                let a = a.to_string_lossy();
                RUNTIME_CREDENTIAL_DIRS
                    .iter()
                    .find(|(prefix, _)| a.starts_with(prefix))
            })
            .map(|(_, why)| (*why).to_owned())
    }

    /// Every finding: secrets by place and label, then Patchbay's files with a wrong mode.
    pub fn hits(&self) -> Vec<Hit> {
        let mut hits = Vec::new();
        let mut files = Vec::new();
        for root in std::iter::once(&self.data_dir).chain(&self.places) {
            walk(root, &mut files);
        }
        files.sort();
        files.dedup();
        for file in &files {
            if self.excluded(file).is_some() {
                continue;
            }
            // A file that went away between listing and reading (a lock released) held nothing.
            let Ok(bytes) = std::fs::read(file) else {
                continue;
            };
            for label in self.secrets.found_in(&bytes) {
                hits.push(Hit {
                    place: file.display().to_string(),
                    what: label.to_owned(),
                });
            }
        }
        for (place, bytes) in &self.texts {
            for label in self.secrets.found_in(bytes) {
                hits.push(Hit {
                    place: place.clone(),
                    what: label.to_owned(),
                });
            }
        }
        hits.extend(mode_hits(&self.data_dir, self.made_by_patchbay));
        hits
    }

    /// Fails the test naming every place a secret was found (by its label) and every file of
    /// Patchbay's with too open a mode.
    pub fn assert_clean(self) {
        assert!(
            !self.secrets.is_empty() || self.none_issued.is_some(),
            "the secret scan of {} has no secret to look for: the servers recorded nothing \
             (tests/node/record-issued.mjs) and the test added none",
            self.data_dir.display()
        );
        let hits = self.hits();
        if hits.is_empty() {
            return;
        }
        let lines: Vec<String> = hits
            .iter()
            .map(|h| format!("  {}: {}", h.place, h.what))
            .collect();
        let skipped: Vec<String> = self
            .excluded
            .iter()
            .map(|(p, why)| format!("  {} ({why})", p.display()))
            .collect();
        panic!(
            "secrets or open modes found ({} secrets looked for: {:?}):\n{}\nskipped:\n{}",
            self.secrets.len(),
            self.secrets,
            lines.join("\n"),
            skipped.join("\n")
        );
    }
}

/// For a test that has a text of its own to check, the window's DOM (its `outerHTML`) above
/// all: fails naming `label` and each secret found in `text`.
pub fn assert_text_clean(secrets: &Secrets, label: &str, text: &str) {
    let found = secrets.found_in(text.as_bytes());
    assert!(
        found.is_empty(),
        "{label} holds secrets: {found:?} (of {} looked for)",
        secrets.len()
    );
}

fn walk(path: &Path, files: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            walk(&entry.path(), files);
        }
    } else if meta.is_file() {
        files.push(path.to_path_buf());
    }
}

/// Each of [`PATCHBAY_PRIVATE`] (with SQLite's companions, and everything inside a private
/// directory) at its mode. Not the data directory itself: a sandbox's is the test's tempdir
/// (vault's and core's own tests check the one Patchbay creates).
#[cfg(unix)]
fn mode_hits(data_dir: &Path, made_by_patchbay: bool) -> Vec<Hit> {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| m.permissions().mode() & 0o777)
    };
    let mut hits = Vec::new();
    if made_by_patchbay {
        match mode(data_dir) {
            Some(0o700) => {}
            have => hits.push(Hit {
                place: data_dir.display().to_string(),
                what: format!(
                    "the data directory Patchbay made has mode {}, not 700",
                    have.map_or("(missing)".into(), |m| format!("{m:o}"))
                ),
            }),
        }
    }
    let mut check = |p: &Path, want: u32| {
        if let Some(have) = mode(p) {
            if have != want {
                hits.push(Hit {
                    place: p.display().to_string(),
                    what: format!("mode {have:o}, not {want:o}"),
                });
            }
        }
    };
    for (name, is_dir, want) in PATCHBAY_PRIVATE {
        let path = data_dir.join(name);
        if *is_dir {
            check(&path, *want);
            let mut inside = Vec::new();
            walk(&path, &mut inside);
            for file in inside {
                check(&file, 0o600);
            }
        } else {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                check(&data_dir.join(format!("{name}{suffix}")), *want);
            }
        }
    }
    hits
}

#[cfg(not(unix))]
fn mode_hits(_data_dir: &Path, _made_by_patchbay: bool) -> Vec<Hit> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        let mut s = Secrets::new();
        s.add("access token", "at-0123456789")
            .add("refresh token", "rt/with+odd=chars")
            .add("too short", "abc");
        s
    }

    #[test]
    fn finds_each_form_and_names_the_label_never_the_value() {
        let s = secrets();
        assert_eq!(s.len(), 2, "a short value is no secret");
        assert_eq!(s.found_in(b"x at-0123456789 y"), ["access token"]);
        assert_eq!(s.found_in(b"?t=rt%2Fwith%2Bodd%3Dchars"), ["refresh token"]);
        assert_eq!(
            s.found_in(br#"{"t":"rt\/with+odd=chars"}"#),
            ["refresh token"]
        );
        assert!(s.found_in(b"at-012345678").is_empty());
        assert!(!format!("{s:?}").contains("at-0123456789"));
        // Binary around a secret (a SQLite page) does not hide it.
        let mut page = vec![0xffu8, 0xfe, 0x00];
        page.extend_from_slice(b"at-0123456789");
        page.push(0x80);
        assert_eq!(s.found_in(&page), ["access token"]);
    }

    #[test]
    fn a_scan_names_the_file_and_skips_the_runtime_stores_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(claude.join(".credentials.json"), "at-0123456789").unwrap();
        std::fs::write(claude.join(".claude.json"), "{}").unwrap();
        let scan = SecretScan::new(dir.path()).secrets(&secrets());
        assert!(scan.hits().is_empty(), "{:?}", scan.hits());

        std::fs::write(dir.path().join("leak.log"), "rt/with+odd=chars").unwrap();
        let hits = SecretScan::new(dir.path()).secrets(&secrets()).hits();
        assert_eq!(
            hits,
            [Hit {
                place: dir.path().join("leak.log").display().to_string(),
                what: "refresh token".into()
            }]
        );
        let skipped = SecretScan::new(dir.path())
            .secrets(&secrets())
            .excluding(dir.path().join("leak.log"), "written by the test")
            .text("stderr", "at-0123456789")
            .hits();
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].place, "stderr");
    }

    #[cfg(unix)]
    #[test]
    fn patchbay_files_with_an_open_mode_are_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("patchbay.sqlite3");
        std::fs::write(&db, "").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let locks = dir.path().join("locks");
        std::fs::create_dir(&locks).unwrap();
        std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o700)).unwrap();
        let hits = SecretScan::new(dir.path()).hits();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].place, db.display().to_string());
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(SecretScan::new(dir.path()).hits().is_empty());
        // tempfile's directory is not Patchbay's: only when Patchbay made it is it checked.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let hits = SecretScan::new(dir.path())
            .data_dir_made_by_patchbay()
            .hits();
        assert_eq!(hits.len(), 1, "{hits:?}");
    }
}
