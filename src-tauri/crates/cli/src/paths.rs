//! `patchbay paths`: where Patchbay keeps its own files (data and config directories, database,
//! user catalog, keychain item, logs) and where it reads each runtime's and client's files, as a
//! table or `--json`. Nothing here decides a path: every one comes from the resolver the rest of
//! Patchbay uses (`patchbay_core::Paths`, `RuntimePaths`, `ClientPaths`, `mcp_remote_dir`), so
//! what is printed is what is read and written.

use anyhow::Result;
use patchbay_catalog::CatalogSource;
use patchbay_core::Paths;
use patchbay_runtimes::clients::{ClientPaths, Os};
use patchbay_runtimes::config::RuntimePaths;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct PathsArgs {
    /// Print JSON (every value a path string, or null when it does not apply).
    #[arg(long)]
    json: bool,
}

/// Where the other programs' files are: the runtimes, mcp-remote and the clients. `None` when
/// no home directory is known (nothing of theirs is read then).
pub struct Elsewhere {
    pub runtimes: RuntimePaths,
    pub mcp_remote: PathBuf,
    pub clients: ClientPaths,
}

impl Elsewhere {
    /// From the process environment, as the commands that read those files resolve them.
    pub fn from_env() -> Option<Elsewhere> {
        Some(Elsewhere {
            runtimes: RuntimePaths::from_env()?,
            mcp_remote: patchbay_core::import::ImportSources::from_env().mcp_remote_dir?,
            clients: ClientPaths::from_env()?,
        })
    }
}

pub fn run(
    data_dir: Option<PathBuf>,
    catalog: Option<PathBuf>,
    args: PathsArgs,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let paths = Paths::resolve(data_dir)?.with_catalog_override(catalog)?;
    let report = report(&paths, Elsewhere::from_env().as_ref(), Os::current());
    if args.json {
        write_json!(out, &report)?;
    } else {
        write!(out, "{}", text(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn path(p: &Path) -> Value {
    Value::String(p.to_string_lossy().into_owned())
}

/// The OS's secret store and how Patchbay's item is named there (keyring 3's conventions: a
/// Windows generic credential's target is `<account>.<service>`).
fn keychain(paths: &Paths, os: Os) -> Value {
    let service = patchbay_core::paths::KEYCHAIN_SERVICE;
    let account = &paths.keychain_account;
    let (store, item) = match os {
        Os::Linux => (
            "Secret Service",
            format!("service \"{service}\", username \"{account}\""),
        ),
        Os::MacOs => (
            "login Keychain",
            format!("service \"{service}\", account \"{account}\""),
        ),
        Os::Windows => (
            "Credential Manager",
            format!("generic credential \"{account}.{service}\""),
        ),
    };
    json!({ "store": store, "service": service, "account": account, "item": item })
}

/// Everything `patchbay paths` prints, as the JSON document.
pub fn report(paths: &Paths, elsewhere: Option<&Elsewhere>, os: Os) -> Value {
    let default_catalog = match &paths.default_catalog {
        CatalogSource::File { path: p, .. } => path(p),
        CatalogSource::Embedded => Value::Null,
    };
    let mut doc = json!({
        "patchbay": {
            "config_dir": path(&paths.config_dir),
            "data_dir": path(&paths.data_dir),
            "database": path(&paths.database()),
            "user_catalog": path(&paths.user_catalog()),
            "oauth_clients": path(&paths.oauth_clients_file()),
            // null: the copy compiled into the binary.
            "default_catalog": default_catalog,
            "catalog_override": paths.catalog_override.as_deref().map(path),
            // Patchbay writes no log file: the app and the CLI log to standard error.
            "logs": "stderr",
            "keychain": keychain(paths, os),
        },
        "runtimes": Value::Null,
        "mcp_remote": Value::Null,
        "clients": Value::Null,
    });
    if let Some(e) = elsewhere {
        let r = &e.runtimes;
        doc["runtimes"] = json!({
            "claude_code": {
                "config": path(&r.claude_json),
                "config_dir": path(&r.claude_config_dir),
                // On macOS Claude Code keeps it in the Keychain item below, this file only as
                // its fallback.
                "credentials": path(&r.claude_credentials),
                "keychain_service": (os == Os::MacOs).then(|| r.claude_keychain_service.clone()),
                "needs_auth_cache": path(&r.claude_needs_auth_cache()),
                "logs": path(&r.claude_cache),
            },
            "codex": {
                "home": path(&r.codex_home),
                "config": path(&r.codex_config()),
                "credentials": path(&r.codex_credentials()),
            },
        });
        doc["mcp_remote"] = json!({ "tokens": path(&e.mcp_remote) });
        let c = &e.clients;
        doc["clients"] = json!({
            "claude_desktop": path(&c.claude_desktop_config),
            "cursor": path(&c.cursor_user),
            "vscode": path(&c.vscode_user),
            "windsurf": path(&c.windsurf),
            "gemini_cli": path(&c.gemini_user),
        });
    }
    doc
}

/// The report as aligned lines, one group per program.
fn text(doc: &Value) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut group = |title: &str, rows: &[(&str, &Value)]| {
        lines.push((title.to_owned(), String::new()));
        for (label, value) in rows {
            let shown = match value {
                Value::String(s) => s.clone(),
                _ => continue,
            };
            lines.push((format!("  {label}:"), shown));
        }
    };
    let p = &doc["patchbay"];
    let default = match &p["default_catalog"] {
        Value::Null => Value::String("<built-in>".into()),
        v => v.clone(),
    };
    let keychain = Value::String(format!(
        "{}, {}",
        p["keychain"]["store"].as_str().unwrap_or_default(),
        p["keychain"]["item"].as_str().unwrap_or_default()
    ));
    let logs = Value::String("standard error (no log file)".into());
    group(
        "Patchbay",
        &[
            ("data directory", &p["data_dir"]),
            ("config directory", &p["config_dir"]),
            ("database", &p["database"]),
            ("user catalog", &p["user_catalog"]),
            ("oauth clients", &p["oauth_clients"]),
            ("default catalog", &default),
            ("catalog (alone)", &p["catalog_override"]),
            ("keychain item", &keychain),
            ("logs", &logs),
        ],
    );
    if doc["runtimes"].is_null() {
        lines.push((
            "No home directory: no runtime or client file is read.".into(),
            String::new(),
        ));
    } else {
        let claude = &doc["runtimes"]["claude_code"];
        let keychain_service = claude["keychain_service"]
            .as_str()
            .map(|s| Value::String(format!("Keychain item, service \"{s}\"")))
            .unwrap_or(Value::Null);
        group(
            "Claude Code",
            &[
                ("config", &claude["config"]),
                ("config directory", &claude["config_dir"]),
                ("credentials", &keychain_service),
                ("credentials file", &claude["credentials"]),
                ("needs-auth cache", &claude["needs_auth_cache"]),
                ("logs", &claude["logs"]),
            ],
        );
        let codex = &doc["runtimes"]["codex"];
        group(
            "Codex",
            &[
                ("home", &codex["home"]),
                ("config", &codex["config"]),
                ("credentials file", &codex["credentials"]),
            ],
        );
        group("mcp-remote", &[("tokens", &doc["mcp_remote"]["tokens"])]);
        let c = &doc["clients"];
        group(
            "Clients",
            &[
                ("Claude Desktop", &c["claude_desktop"]),
                ("Cursor", &c["cursor"]),
                ("VS Code", &c["vscode"]),
                ("Windsurf", &c["windsurf"]),
                ("Gemini CLI", &c["gemini_cli"]),
            ],
        );
    }
    let width = lines
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    lines
        .into_iter()
        .map(|(label, value)| {
            if value.is_empty() {
                format!("{label}\n")
            } else {
                format!("{label:<width$} {}\n", crate::terminal::one_line(&value))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn elsewhere(home: &Path, os: Os, env: &dyn Fn(&str) -> Option<String>) -> Elsewhere {
        Elsewhere {
            runtimes: RuntimePaths::resolve(home, env),
            mcp_remote: patchbay_runtimes::mcp_remote::mcp_remote_dir(home, env),
            clients: ClientPaths::resolve(home, os, env),
        }
    }

    #[test]
    fn a_data_dir_holds_the_database_user_catalog_and_oauth_clients() {
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb"))).unwrap();
        let doc = report(&paths, None, Os::Linux);
        let p = &doc["patchbay"];
        assert_eq!(p["data_dir"], "/srv/pb");
        assert_eq!(p["config_dir"], "/srv/pb");
        assert_eq!(p["database"], "/srv/pb/patchbay.sqlite3");
        assert_eq!(p["user_catalog"], "/srv/pb/mcp.json");
        assert_eq!(p["oauth_clients"], "/srv/pb/oauth-clients.json");
        assert_eq!(p["catalog_override"], Value::Null);
        assert!(doc["runtimes"].is_null() && doc["clients"].is_null());
        assert!(text(&doc).contains("No home directory"));
    }

    #[test]
    fn the_keychain_item_is_named_as_each_platforms_store_files_it() {
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb"))).unwrap();
        let account = paths.keychain_account.clone();
        assert!(account.starts_with("vault-master-key-"));
        let windows = report(&paths, None, Os::Windows);
        assert_eq!(
            windows["patchbay"]["keychain"]["store"],
            "Credential Manager"
        );
        assert_eq!(
            windows["patchbay"]["keychain"]["item"],
            format!("generic credential \"{account}.Patchbay\"")
        );
        let linux = report(&paths, None, Os::Linux);
        assert_eq!(linux["patchbay"]["keychain"]["store"], "Secret Service");
        assert_eq!(linux["patchbay"]["keychain"]["service"], "Patchbay");
    }

    #[test]
    fn linux_files_follow_home_and_xdg() {
        let env = env_of(&[
            ("XDG_CONFIG_HOME", "/x/config"),
            ("XDG_CACHE_HOME", "/x/cache"),
        ]);
        let home = Path::new("/home/u");
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb"))).unwrap();
        let doc = report(&paths, Some(&elsewhere(home, Os::Linux, &env)), Os::Linux);
        let claude = &doc["runtimes"]["claude_code"];
        assert_eq!(claude["config"], "/home/u/.claude.json");
        assert_eq!(claude["credentials"], "/home/u/.claude/.credentials.json");
        assert_eq!(
            claude["needs_auth_cache"],
            "/home/u/.claude/mcp-needs-auth-cache.json"
        );
        assert_eq!(claude["keychain_service"], Value::Null);
        if cfg!(target_os = "linux") {
            assert_eq!(claude["logs"], "/x/cache/claude-cli-nodejs");
        }
        assert_eq!(
            doc["runtimes"]["codex"]["config"],
            "/home/u/.codex/config.toml"
        );
        assert_eq!(
            doc["runtimes"]["codex"]["credentials"],
            "/home/u/.codex/.credentials.json"
        );
        assert_eq!(
            doc["mcp_remote"]["tokens"],
            "/home/u/.mcp-auth/mcp-remote-v1"
        );
        let c = &doc["clients"];
        assert_eq!(
            c["claude_desktop"],
            "/x/config/Claude/claude_desktop_config.json"
        );
        assert_eq!(c["vscode"], "/x/config/Code/User/mcp.json");
        assert_eq!(c["cursor"], "/home/u/.cursor/mcp.json");
        assert_eq!(c["windsurf"], "/home/u/.codeium/windsurf/mcp_config.json");
        assert_eq!(c["gemini_cli"], "/home/u/.gemini/settings.json");
    }

    #[test]
    fn the_runtimes_own_variables_move_their_files() {
        let env = env_of(&[
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("CODEX_HOME", "/k"),
            ("MCP_REMOTE_CONFIG_DIR", "/m"),
        ]);
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb"))).unwrap();
        let doc = report(
            &paths,
            Some(&elsewhere(Path::new("/home/u"), Os::Linux, &env)),
            Os::Linux,
        );
        let r = &doc["runtimes"];
        assert_eq!(r["claude_code"]["config"], "/c/.claude.json");
        assert_eq!(r["claude_code"]["credentials"], "/c/.credentials.json");
        assert_eq!(r["codex"]["config"], "/k/config.toml");
        assert_eq!(doc["mcp_remote"]["tokens"], "/m/mcp-remote-v1");
        assert_eq!(doc["clients"]["codex"], Value::Null);
    }

    #[test]
    fn windows_clients_live_under_appdata_and_macos_ones_under_application_support() {
        let env = env_of(&[("APPDATA", "/C/Users/u/AppData/Roaming")]);
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb"))).unwrap();
        let home = Path::new("/C/Users/u");
        let doc = report(
            &paths,
            Some(&elsewhere(home, Os::Windows, &env)),
            Os::Windows,
        );
        assert_eq!(
            doc["clients"]["claude_desktop"],
            "/C/Users/u/AppData/Roaming/Claude/claude_desktop_config.json"
        );
        assert_eq!(
            doc["clients"]["vscode"],
            "/C/Users/u/AppData/Roaming/Code/User/mcp.json"
        );
        let home = Path::new("/Users/u");
        let doc = report(
            &paths,
            Some(&elsewhere(home, Os::MacOs, &env_of(&[]))),
            Os::MacOs,
        );
        assert_eq!(
            doc["clients"]["claude_desktop"],
            "/Users/u/Library/Application Support/Claude/claude_desktop_config.json"
        );
        assert_eq!(
            doc["runtimes"]["claude_code"]["keychain_service"],
            "Claude Code-credentials"
        );
        assert!(text(&doc).contains("Keychain item, service \"Claude Code-credentials\""));
    }

    #[test]
    fn the_table_names_every_file_once_aligned() {
        let paths = Paths::resolve(Some(PathBuf::from("/srv/pb")))
            .unwrap()
            .with_catalog_override(Some(PathBuf::from("/srv/only.json")))
            .unwrap();
        let env = env_of(&[]);
        let doc = report(
            &paths,
            Some(&elsewhere(Path::new("/home/u"), Os::Linux, &env)),
            Os::Linux,
        );
        let table = text(&doc);
        for line in [
            "  database:",
            "/srv/pb/patchbay.sqlite3",
            "  catalog (alone):",
            "/srv/only.json",
            "  Cursor:",
            "/home/u/.cursor/mcp.json",
            "standard error (no log file)",
        ] {
            assert_eq!(table.matches(line).count(), 1, "{line} in:\n{table}");
        }
        // Every value starts in one column.
        let columns: std::collections::BTreeSet<usize> = table
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(|l| {
                let colon = l.find(':').unwrap();
                colon + 1 + l[colon + 1..].find(|c| c != ' ').unwrap()
            })
            .collect();
        assert_eq!(columns.len(), 1, "{table}");
    }
}
