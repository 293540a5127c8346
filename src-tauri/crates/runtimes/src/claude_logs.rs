//! Claude Code's MCP logs, read for one line: the one in which Claude Code says that its own
//! refresh of a server's token was rejected, so that Patchbay retires the credential instead of
//! writing the dead refresh token back.
//!
//! Measured on Claude Code 2.1.332 (not in the shared reference): every run writes
//! `<cache>/<cwd slug>/mcp-logs-<server slug>/<ISO time>.jsonl`, one JSON object a line
//! (`{"debug"|"error": text, "timestamp", "sessionId", "cwd"}`), even without `--debug`. `<cache>`
//! is `$XDG_CACHE_HOME/claude-cli-nodejs` (else `~/.cache/...`), `~/Library/Caches/claude-cli-nodejs`
//! on macOS, `%LOCALAPPDATA%\claude-cli-nodejs\Cache` on Windows; a slug is the name with every
//! character outside `[A-Za-z0-9]` turned into `-` (names over 200 characters also get a hash
//! suffix, which is not reproduced here: such a server is simply not matched). When a proactive
//! refresh (the access token had expired) is refused, the line reads "Token refresh failed with
//! invalid_grant: Invalid refresh token" and Claude Code strips its stored entry (access token
//! emptied, refresh token removed). A refresh after a 401 logs no such phrase: that case is not
//! seen here.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// Lines longer than this are skipped, not parsed (a log line is well under 1 KiB).
const LINE_MAX: usize = 64 * 1024;

/// Where Claude Code keeps its logs on this platform, from an injectable home and environment.
pub fn claude_cache_dir(home: &Path, env: crate::config::Resolver<'_>) -> PathBuf {
    const APP: &str = "claude-cli-nodejs";
    if cfg!(target_os = "macos") {
        home.join("Library").join("Caches").join(APP)
    } else if cfg!(windows) {
        let local = env("LOCALAPPDATA")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("AppData").join("Local"));
        local.join(APP).join("Cache")
    } else {
        let cache = env("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".cache"));
        cache.join(APP)
    }
}

/// A server name as Claude Code spells it in a log directory name.
pub fn log_slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The phrasing of a refresh the provider rejected, as a runtime reports it: "Token refresh
/// failed with <grant error>" or "Invalid refresh token". A bare `invalid_grant` elsewhere in the
/// text is not enough: a server that brokers another provider's OAuth reports that provider's
/// errors while our credential for it is healthy.
pub fn refresh_rejected(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    const GRANT_ERRORS: [&str; 3] = ["invalid_grant", "invalid_client", "unauthorized_client"];
    m.contains("invalid refresh token")
        || GRANT_ERRORS
            .iter()
            .any(|e| m.contains(&format!("token refresh failed with {e}")))
}

/// One rejected refresh found in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRejection {
    /// The log directory's server slug (see [`log_slug`]).
    pub server_slug: String,
    /// The logged text (it carries no token: Claude Code redacts them).
    pub message: String,
    pub at: DateTime<Utc>,
    pub file: PathBuf,
}

/// Reads Claude Code's MCP logs incrementally: each file from where the last scan stopped.
#[derive(Debug)]
pub struct ClaudeMcpLogs {
    root: PathBuf,
    /// Bytes of complete lines already read, per file.
    read_to: HashMap<PathBuf, u64>,
}

impl ClaudeMcpLogs {
    pub fn new(root: impl Into<PathBuf>) -> ClaudeMcpLogs {
        ClaudeMcpLogs {
            root: root.into(),
            read_to: HashMap::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The rejections logged since the last scan. Files last modified before `since` are
    /// skipped (marked read) without being opened: a rejection older than the credential it
    /// would retire is history. A missing cache directory is no rejection.
    pub fn scan(&mut self, since: DateTime<Utc>) -> Vec<LoggedRejection> {
        let mut found = Vec::new();
        for (slug, file) in self.log_files() {
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            let len = meta.len();
            let from = self.read_to.get(&file).copied().unwrap_or(0);
            if from >= len {
                // Unchanged, or truncated/replaced (start over next time it grows).
                if from > len {
                    self.read_to.insert(file.clone(), 0);
                }
                continue;
            }
            let modified = meta.modified().ok().map(DateTime::<Utc>::from);
            if from == 0 && modified.is_some_and(|m| m < since) {
                self.read_to.insert(file.clone(), len);
                continue;
            }
            let Ok((text, consumed)) = read_complete_lines(&file, from, len) else {
                continue;
            };
            self.read_to.insert(file.clone(), from + consumed);
            for line in text.lines() {
                if let Some(rejection) = parse_line(line, &slug, &file) {
                    if rejection.at >= since {
                        found.push(rejection);
                    }
                }
            }
        }
        found
    }

    /// `(server slug, file)` for every `<root>/*/mcp-logs-<slug>/*.jsonl`.
    fn log_files(&self) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        let Ok(projects) = std::fs::read_dir(&self.root) else {
            return out;
        };
        for project in projects.flatten() {
            let Ok(servers) = std::fs::read_dir(project.path()) else {
                continue;
            };
            for server in servers.flatten() {
                let name = server.file_name().to_string_lossy().into_owned();
                let Some(slug) = name.strip_prefix("mcp-logs-") else {
                    continue;
                };
                let Ok(files) = std::fs::read_dir(server.path()) else {
                    continue;
                };
                for file in files.flatten() {
                    let path = file.path();
                    if path.extension().is_some_and(|e| e == "jsonl") {
                        out.push((slug.to_string(), path));
                    }
                }
            }
        }
        out.sort();
        out
    }
}

/// The text from `from` up to the last newline before `len`, and how many bytes that is (a line
/// still being written is left for the next scan).
fn read_complete_lines(file: &Path, from: u64, len: u64) -> std::io::Result<(String, u64)> {
    let mut f = std::fs::File::open(file)?;
    f.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity((len - from) as usize);
    f.take(len - from).read_to_end(&mut bytes)?;
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(complete);
    Ok((
        String::from_utf8_lossy(&bytes).into_owned(),
        complete as u64,
    ))
}

fn parse_line(line: &str, slug: &str, file: &Path) -> Option<LoggedRejection> {
    if line.len() > LINE_MAX || !line.contains("efresh") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let message = v
        .get("debug")
        .or_else(|| v.get("error"))
        .and_then(|m| m.as_str())?;
    if !refresh_rejected(message) {
        return None;
    }
    let at = v
        .get("timestamp")
        .and_then(|t| t.as_str())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())?
        .with_timezone(&Utc);
    Some(LoggedRejection {
        server_slug: slug.to_string(),
        message: message.to_string(),
        at,
        file: file.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Lines as Claude Code 2.1.332 wrote them (a proactive refresh refused with invalid_grant).
    const LOG: &str = r#"{"debug":"Token expires in -3602s, attempting proactive refresh","timestamp":"2026-11-30T12:26:16.163Z","sessionId":"f564b694","cwd":"/tmp/p"}
{"debug":"Starting token refresh","timestamp":"2026-11-30T12:26:16.165Z","sessionId":"f564b694","cwd":"/tmp/p"}
{"debug":"Token refresh failed with invalid_grant: Invalid refresh token","timestamp":"2026-11-30T12:26:16.177Z","sessionId":"f564b694","cwd":"/tmp/p"}
{"debug":"Token refresh failed, returning current tokens","timestamp":"2026-11-30T12:26:16.180Z","sessionId":"f564b694","cwd":"/tmp/p"}
"#;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_rejection_line_is_found_once_and_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("-tmp-p").join("mcp-logs-my-server");
        std::fs::create_dir_all(&logs).unwrap();
        let file = logs.join("2026-11-30T12-26-16-157Z.jsonl");
        std::fs::write(&file, LOG).unwrap();
        let mut scanner = ClaudeMcpLogs::new(dir.path());
        let found = scanner.scan(t("2026-11-30T12:00:00Z"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].server_slug, "my-server");
        assert_eq!(found[0].at, t("2026-11-30T12:26:16.177Z"));
        assert!(found[0]
            .message
            .starts_with("Token refresh failed with invalid_grant"));
        // Read once: a second scan finds nothing new.
        assert!(scanner.scan(t("2026-11-30T12:00:00Z")).is_empty());
        // A line appended later, half written at first, is found once complete.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(br#"{"debug":"Token refresh failed with invalid_grant: Invalid refresh token","timestamp":"2026-11-30T13:00:00.000Z""#).unwrap();
        assert!(scanner.scan(t("2026-11-30T12:00:00Z")).is_empty());
        f.write_all(b"}\n").unwrap();
        assert_eq!(scanner.scan(t("2026-11-30T12:00:00Z")).len(), 1);
    }

    #[test]
    fn rejections_older_than_since_are_history() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("-tmp-p").join("mcp-logs-sdk");
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(logs.join("a.jsonl"), LOG).unwrap();
        let mut scanner = ClaudeMcpLogs::new(dir.path());
        assert!(scanner.scan(t("2026-11-30T12:30:00Z")).is_empty());
        // No cache directory at all: nothing, no error.
        assert!(ClaudeMcpLogs::new(dir.path().join("absent"))
            .scan(t("2026-11-30T12:00:00Z"))
            .is_empty());
    }

    #[test]
    fn slugs_and_phrasing() {
        assert_eq!(log_slug("my server.v2"), "my-server-v2");
        assert_eq!(log_slug("sdk"), "sdk");
        assert!(refresh_rejected(
            "Token refresh failed with invalid_grant: Invalid refresh token"
        ));
        assert!(refresh_rejected(
            "MCP server \"notion\": Invalid refresh token"
        ));
        assert!(!refresh_rejected(
            "Token refresh failed, returning current tokens"
        ));
        assert!(!refresh_rejected(
            "tool call failed: upstream said invalid_grant"
        ));
        assert!(!refresh_rejected("invalid_grant"));
    }
}
