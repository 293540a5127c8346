//! The health board's memory: a ring buffer of the last checks per connector (calls, failure
//! rate, p50/p95 latency, last error and when), the tools each connector offered last, and its
//! failure streak (the degraded rule's state). Kept in its own SQLite file (`health.sqlite` in the
//! data directory), apart from the vault's database: none of it is secret, all of it can be
//! thrown away, and it migrates on its own schedule.

use crate::degraded::{Degraded, DegradedRule, Streak, Transition};
use crate::fallback::CheckOutcome;
use crate::handshake::ToolInfo;
use crate::{HealthError, TransportKind};
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use rusqlite_migration::{Migrations, M};
use serde::Serialize;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The file name in the data directory.
pub const HEALTH_FILE: &str = "health.sqlite";

/// Checks kept per connector; older ones fall off the ring.
pub const RING_CAPACITY: usize = 100;

/// Error-drawer entries returned per connector.
pub const RECENT_ERRORS: usize = 10;

/// The longest error detail kept (the error drawer's 4 KB).
pub const DETAIL_MAX: usize = 4096;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![M::up(
        r#"
CREATE TABLE checks (
    id          INTEGER PRIMARY KEY,
    connector   TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    ok          INTEGER NOT NULL,
    latency_ms  INTEGER NOT NULL,
    transport   TEXT NOT NULL,
    error_kind  TEXT,
    http_status INTEGER,
    error       TEXT,
    -- The failures in a row when this one was recorded (the error drawer's "retries").
    streak      INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX checks_by_connector ON checks (connector, id);

CREATE TABLE tools (
    connector     TEXT PRIMARY KEY NOT NULL,
    checked_at_ms INTEGER NOT NULL,
    transport     TEXT NOT NULL,
    tools_json    TEXT NOT NULL
) STRICT;

CREATE TABLE streaks (
    connector          TEXT PRIMARY KEY NOT NULL,
    failures           INTEGER NOT NULL,
    next_strike_at_ms  INTEGER,
    degraded_since_ms  INTEGER,
    degraded_error     TEXT,
    degraded_kind      TEXT
) STRICT;
"#,
    )])
}

/// One check as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CheckRecord {
    #[serde(serialize_with = "rfc3339")]
    pub at: DateTime<Utc>,
    pub ok: bool,
    pub latency_ms: u64,
    pub transport: TransportKind,
    pub error_kind: Option<String>,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    /// Failures in a row at the time.
    pub streak: u32,
}

/// One connector's row on the health board.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HealthStats {
    pub connector: String,
    /// Checks in the window (at most [`RING_CAPACITY`]).
    pub calls: usize,
    pub failures: usize,
    /// `failures / calls`, 0 when there were none.
    pub fail_rate: f64,
    /// Latency percentiles of the successful checks (a refused connection's 1 ms would flatter
    /// them and a timeout's 15 s would swamp them); `None` before the first success.
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
    pub last_error: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub last_error_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub last_ok_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub last_check_at: Option<DateTime<Utc>>,
    /// The newest failures first, at most [`RECENT_ERRORS`] (the error drawer).
    pub recent_errors: Vec<CheckRecord>,
}

/// The tools a connector offered at its last successful check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct KnownTools {
    #[serde(serialize_with = "rfc3339")]
    pub checked_at: DateTime<Utc>,
    pub transport: TransportKind,
    pub tools: Vec<StoredTool>,
}

/// A tool as kept between checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StoredTool {
    /// `<connector>.<tool>`.
    pub name: String,
    pub tool: String,
    pub title: Option<String>,
    pub description: Option<String>,
}

impl From<&ToolInfo> for StoredTool {
    fn from(t: &ToolInfo) -> Self {
        StoredTool {
            name: t.name.clone(),
            tool: t.tool.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
        }
    }
}

/// One call through the gateway or the stdio bridge, for [`HealthStore::record_calls`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    pub connector: String,
    pub at: DateTime<Utc>,
    pub latency: Duration,
    pub transport: TransportKind,
    pub http_status: Option<u16>,
    /// `None` when it succeeded; else what went wrong, already free of secrets.
    pub error: Option<String>,
}

/// What recording a check did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recorded {
    pub transition: Transition,
    pub streak: Streak,
}

/// The health database. `Send + Sync`; share it in an `Arc`.
pub struct HealthStore {
    conn: Mutex<Connection>,
    /// The stdio bridges' calls waiting for the board ([`crate::spool`]).
    spool: std::path::PathBuf,
}

impl std::fmt::Debug for HealthStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealthStore")
    }
}

impl HealthStore {
    /// Creates the file (and its directory) when missing, and migrates it.
    pub fn open(path: &Path) -> Result<HealthStore, HealthError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            patchbay_vault::private::create_private_dir(parent).map_err(|source| {
                HealthError::Io {
                    path: parent.display().to_string(),
                    source,
                }
            })?;
        }
        patchbay_vault::private::create_private_file(path).map_err(|source| HealthError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let mut conn = Connection::open(path)?;
        restrict_permissions(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: the tray's periodic check and a `patchbay check` in a terminal do not block
        // each other's reads.
        let _: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        migrations().to_latest(&mut conn)?;
        Ok(HealthStore {
            conn: Mutex::new(conn),
            spool: crate::spool::spool_path(path),
        })
    }

    /// The connection, with the bridges' spooled calls moved onto the board first, so every
    /// read sees them (an empty spool costs one `stat`).
    fn conn(&self) -> MutexGuard<'_, Connection> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.drain_spool(&mut conn) {
            tracing::warn!("the stdio bridges' calls cannot reach the health board yet: {e}");
        }
        conn
    }

    fn drain_spool(&self, conn: &mut Connection) -> Result<(), HealthError> {
        let drained = crate::spool::take(&self.spool)?;
        if drained.unreadable > 0 {
            tracing::warn!(
                "{} unreadable line(s) in {} skipped",
                drained.unreadable,
                self.spool.display()
            );
        }
        if drained.calls.is_empty() {
            return Ok(());
        }
        if let Err(e) = insert_calls(conn, &drained.calls) {
            crate::spool::put_back(&self.spool, drained)?;
            return Err(e);
        }
        Ok(())
    }

    /// Records `outcome` at `now`: one more entry on the ring (the oldest beyond
    /// [`RING_CAPACITY`] dropped), the tools when it passed, and the streak moved by `rule`.
    /// `message` is the failure as shown (already scrubbed). One transaction.
    pub fn record(
        &self,
        outcome: &CheckOutcome,
        rule: &DegradedRule,
        now: DateTime<Utc>,
    ) -> Result<Recorded, HealthError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let streak = read_streak(&tx, &outcome.connector)?;
        let (streak, transition) = match &outcome.result {
            Ok(_) => rule.after_success(&streak),
            Err(e) => rule.after_failure(&streak, e, &e.to_string(), now),
        };
        let (latency_ms, error) = match &outcome.result {
            Ok(h) => (millis(h.latency), None),
            Err(e) => (millis(outcome.elapsed), Some(e)),
        };
        tx.execute(
            "INSERT INTO checks (connector, at_ms, ok, latency_ms, transport, error_kind, http_status, error, streak)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                outcome.connector,
                now.timestamp_millis(),
                outcome.ok(),
                latency_ms as i64,
                outcome.transport().as_str(),
                error.map(|e| e.kind()),
                error.and_then(|e| e.http_status()),
                error.map(|e| cut(&e.to_string(), DETAIL_MAX)),
                streak.failures,
            ],
        )?;
        // The ring: keep the newest RING_CAPACITY of this connector.
        tx.execute(
            "DELETE FROM checks WHERE connector = ?1 AND id NOT IN
                (SELECT id FROM checks WHERE connector = ?1 ORDER BY id DESC LIMIT ?2)",
            params![outcome.connector, RING_CAPACITY as i64],
        )?;
        if let Ok(h) = &outcome.result {
            let tools: Vec<StoredTool> = h.tools.iter().map(StoredTool::from).collect();
            let json = serde_json::to_string(&tools).map_err(|e| {
                HealthError::Corrupt(format!("tools of {}: {e}", outcome.connector))
            })?;
            tx.execute(
                "INSERT INTO tools (connector, checked_at_ms, transport, tools_json) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (connector) DO UPDATE SET checked_at_ms = ?2, transport = ?3, tools_json = ?4",
                params![outcome.connector, now.timestamp_millis(), h.transport.as_str(), json],
            )?;
        }
        write_streak(&tx, &outcome.connector, &streak)?;
        tx.commit()?;
        Ok(Recorded { transition, streak })
    }

    /// The stored checks of `connector`, oldest first.
    pub fn records(&self, connector: &str) -> Result<Vec<CheckRecord>, HealthError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT at_ms, ok, latency_ms, transport, error_kind, http_status, error, streak
             FROM checks WHERE connector = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([connector], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<u16>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, u32>(7)?,
            ))
        })?;
        let mut records = Vec::new();
        for row in rows {
            let (at, ok, latency, transport, error_kind, http_status, error, streak) = row?;
            records.push(CheckRecord {
                at: from_ms(at)?,
                ok,
                latency_ms: latency.max(0) as u64,
                transport: TransportKind::parse(&transport)
                    .ok_or_else(|| HealthError::Corrupt(format!("transport {transport:?}")))?,
                error_kind,
                http_status,
                error,
                streak,
            });
        }
        Ok(records)
    }

    /// The board row of `connector` (zeros when it was never checked).
    pub fn stats(&self, connector: &str) -> Result<HealthStats, HealthError> {
        Ok(stats_of(connector, &self.records(connector)?))
    }

    /// Every connector ever checked (and still on the ring), by name.
    pub fn connectors(&self) -> Result<Vec<String>, HealthError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT connector FROM checks UNION SELECT connector FROM streaks ORDER BY 1",
        )?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(names)
    }

    pub fn streak(&self, connector: &str) -> Result<Streak, HealthError> {
        read_streak(&self.conn(), connector)
    }

    /// The degraded connectors and why, by name.
    pub fn degraded(&self) -> Result<Vec<(String, Degraded)>, HealthError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(
            "SELECT connector, degraded_since_ms, degraded_error, degraded_kind FROM streaks
             WHERE degraded_since_ms IS NOT NULL ORDER BY connector",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, since, error, kind) = row?;
            out.push((
                name,
                Degraded {
                    since: from_ms(since)?,
                    error: error.unwrap_or_default(),
                    kind: kind.unwrap_or_default(),
                },
            ));
        }
        Ok(out)
    }

    /// The tools `connector` offered at its last successful check.
    pub fn tools(&self, connector: &str) -> Result<Option<KnownTools>, HealthError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT checked_at_ms, transport, tools_json FROM tools WHERE connector = ?1",
                [connector],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()?;
        let Some((at, transport, json)) = row else {
            return Ok(None);
        };
        Ok(Some(KnownTools {
            checked_at: from_ms(at)?,
            transport: TransportKind::parse(&transport)
                .ok_or_else(|| HealthError::Corrupt(format!("transport {transport:?}")))?,
            tools: serde_json::from_str(&json)
                .map_err(|e| HealthError::Corrupt(format!("tools of {connector}: {e}")))?,
        }))
    }

    /// Records calls made through the gateway or the stdio bridge (real use, not checks): each
    /// one more entry on its connector's ring, in one transaction. The tools and the failure
    /// streak are left as the last check set them.
    pub fn record_calls(&self, calls: &[CallRecord]) -> Result<(), HealthError> {
        insert_calls(&mut self.conn(), calls)
    }

    /// Forget everything about `connector` (it left the catalog).
    pub fn forget(&self, connector: &str) -> Result<(), HealthError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for table in ["checks", "tools", "streaks"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE connector = ?1"),
                [connector],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// [`HealthStore::record_calls`] on `conn`: one transaction.
fn insert_calls(conn: &mut Connection, calls: &[CallRecord]) -> Result<(), HealthError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for call in calls {
        tx.execute(
                "INSERT INTO checks (connector, at_ms, ok, latency_ms, transport, error_kind, http_status, error, streak)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)",
                params![
                    call.connector,
                    call.at.timestamp_millis(),
                    call.error.is_none(),
                    millis(call.latency) as i64,
                    call.transport.as_str(),
                    call.error.as_ref().map(|_| "call"),
                    call.http_status,
                    call.error.as_deref().map(|e| cut(e, DETAIL_MAX)),
                ],
            )?;
    }
    let mut trimmed: Vec<&str> = calls.iter().map(|c| c.connector.as_str()).collect();
    trimmed.sort_unstable();
    trimmed.dedup();
    for connector in trimmed {
        tx.execute(
            "DELETE FROM checks WHERE connector = ?1 AND id NOT IN
                    (SELECT id FROM checks WHERE connector = ?1 ORDER BY id DESC LIMIT ?2)",
            params![connector, RING_CAPACITY as i64],
        )?;
    }
    tx.commit()?;
    Ok(())
}

fn read_streak(conn: &Connection, connector: &str) -> Result<Streak, HealthError> {
    let row = conn
        .query_row(
            "SELECT failures, next_strike_at_ms, degraded_since_ms, degraded_error, degraded_kind
             FROM streaks WHERE connector = ?1",
            [connector],
            |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            },
        )
        .optional()?;
    let Some((failures, next, since, error, kind)) = row else {
        return Ok(Streak::default());
    };
    Ok(Streak {
        failures,
        next_strike_at: next.map(from_ms).transpose()?,
        degraded: match since {
            Some(since) => Some(Degraded {
                since: from_ms(since)?,
                error: error.unwrap_or_default(),
                kind: kind.unwrap_or_default(),
            }),
            None => None,
        },
    })
}

fn write_streak(conn: &Connection, connector: &str, streak: &Streak) -> Result<(), HealthError> {
    if *streak == Streak::default() {
        conn.execute("DELETE FROM streaks WHERE connector = ?1", [connector])?;
        return Ok(());
    }
    let degraded = streak.degraded.as_ref();
    conn.execute(
        "INSERT INTO streaks (connector, failures, next_strike_at_ms, degraded_since_ms, degraded_error, degraded_kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (connector) DO UPDATE SET failures = ?2, next_strike_at_ms = ?3,
             degraded_since_ms = ?4, degraded_error = ?5, degraded_kind = ?6",
        params![
            connector,
            streak.failures,
            streak.next_strike_at.map(|t| t.timestamp_millis()),
            degraded.map(|d| d.since.timestamp_millis()),
            degraded.map(|d| d.error.as_str()),
            degraded.map(|d| d.kind.as_str()),
        ],
    )?;
    Ok(())
}

/// The board row from a connector's records (oldest first).
pub fn stats_of(connector: &str, records: &[CheckRecord]) -> HealthStats {
    let calls = records.len();
    let failures = records.iter().filter(|r| !r.ok).count();
    let mut latencies: Vec<u64> = records
        .iter()
        .filter(|r| r.ok)
        .map(|r| r.latency_ms)
        .collect();
    latencies.sort_unstable();
    let last_failure = records.iter().rev().find(|r| !r.ok);
    HealthStats {
        connector: connector.to_owned(),
        calls,
        failures,
        fail_rate: if calls == 0 {
            0.0
        } else {
            failures as f64 / calls as f64
        },
        p50_ms: percentile(&latencies, 50),
        p95_ms: percentile(&latencies, 95),
        last_error: last_failure.and_then(|r| r.error.clone()),
        last_error_at: last_failure.map(|r| r.at),
        last_ok_at: records.iter().rev().find(|r| r.ok).map(|r| r.at),
        last_check_at: records.last().map(|r| r.at),
        recent_errors: records
            .iter()
            .rev()
            .filter(|r| !r.ok)
            .take(RECENT_ERRORS)
            .cloned()
            .collect(),
    }
}

/// Nearest-rank percentile of sorted values: the smallest value with at least `p`% of the
/// values at or below it.
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p as usize * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

fn from_ms(ms: i64) -> Result<DateTime<Utc>, HealthError> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| HealthError::Corrupt(format!("timestamp {ms} out of range")))
}

/// At most `max` bytes, cut on a character boundary.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Times in the health JSON: RFC 3339, milliseconds, `Z`.
pub fn rfc3339<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// [`rfc3339`], or `null`.
pub fn rfc3339_opt<S: serde::Serializer>(
    t: &Option<DateTime<Utc>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// Server names and errors are nobody else's business.
#[cfg(unix)]
fn restrict_permissions(path: &Path) -> Result<(), HealthError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        HealthError::Io {
            path: path.display().to_string(),
            source,
        }
    })
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) -> Result<(), HealthError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fallback::CheckOutcome;
    use crate::handshake::{Handshake, ServerIdentity};
    use crate::CheckError;

    /// Issue 14: a new health store and the directories it creates are the owner's only.
    #[cfg(unix)]
    #[test]
    fn a_new_store_and_its_directories_are_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("data/health.sqlite");
        let _store = HealthStore::open(&path).unwrap();
        assert_eq!(mode(&root.path().join("data")), 0o700);
        for suffix in ["", "-wal", "-shm"] {
            let file = root.path().join(format!("data/health.sqlite{suffix}"));
            if suffix.is_empty() || file.exists() {
                assert_eq!(mode(&file), 0o600, "{}", file.display());
            }
        }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    fn record(ok: bool, latency_ms: u64, secs: i64) -> CheckRecord {
        CheckRecord {
            at: at(secs),
            ok,
            latency_ms,
            transport: TransportKind::StreamableHttp,
            error_kind: (!ok).then(|| "unreachable".into()),
            http_status: None,
            error: (!ok).then(|| format!("failed at {secs}")),
            streak: 0,
        }
    }

    fn outcome(connector: &str, result: Result<Handshake, CheckError>) -> CheckOutcome {
        CheckOutcome {
            connector: connector.into(),
            configured: TransportKind::StreamableHttp,
            result,
            fell_back_to: None,
            attempts: vec![],
            retries: 0,
            elapsed: Duration::from_millis(3),
        }
    }

    fn passed(latency_ms: u64) -> Result<Handshake, CheckError> {
        Ok(Handshake {
            transport: TransportKind::StreamableHttp,
            server: ServerIdentity {
                name: "s".into(),
                version: "1".into(),
                protocol_version: "2025-03-26".into(),
            },
            tools: vec![ToolInfo {
                name: "x.echo".into(),
                tool: "echo".into(),
                title: None,
                description: Some("Echoes".into()),
            }],
            latency: Duration::from_millis(latency_ms),
        })
    }

    fn refused() -> Result<Handshake, CheckError> {
        Err(CheckError::Unreachable {
            transport: TransportKind::StreamableHttp,
            message: "Connection refused".into(),
        })
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&values, 50), Some(50));
        assert_eq!(percentile(&values, 95), Some(95));
        assert_eq!(percentile(&[7], 50), Some(7));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[1, 2, 3, 4], 50), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 95), Some(4));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn stats_count_failures_and_time_only_successes() {
        let mut records: Vec<CheckRecord> =
            (0..18).map(|i| record(true, 10 + i, i as i64)).collect();
        records.push(record(false, 15_000, 100));
        records.push(record(true, 1_000, 101));
        let stats = stats_of("x", &records);
        assert_eq!(stats.calls, 20);
        assert_eq!(stats.failures, 1);
        assert!((stats.fail_rate - 0.05).abs() < 1e-9);
        // 19 successes: 10..=27 and 1000. p50 is the 10th (19), p95 the 19th (1000).
        assert_eq!(stats.p50_ms, Some(19));
        assert_eq!(stats.p95_ms, Some(1_000));
        assert_eq!(stats.last_error.as_deref(), Some("failed at 100"));
        assert_eq!(stats.last_error_at, Some(at(100)));
        assert_eq!(stats.last_ok_at, Some(at(101)));
        assert_eq!(stats.recent_errors.len(), 1);

        let empty = stats_of("y", &[]);
        assert_eq!((empty.calls, empty.fail_rate, empty.p50_ms), (0, 0.0, None));
    }

    #[test]
    fn the_ring_keeps_the_newest_checks_and_the_streak_persists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HEALTH_FILE);
        let store = HealthStore::open(&path).unwrap();
        let rule = DegradedRule::default();
        for i in 0..(RING_CAPACITY as u64 + 5) {
            store
                .record(&outcome("a", passed(i)), &rule, at(i as i64))
                .unwrap();
        }
        let records = store.records("a").unwrap();
        assert_eq!(records.len(), RING_CAPACITY);
        assert_eq!(records[0].latency_ms, 5, "the oldest five fell off");
        assert_eq!(store.stats("a").unwrap().calls, RING_CAPACITY);
        let tools = store.tools("a").unwrap().expect("tools");
        assert_eq!(tools.tools[0].name, "x.echo");

        // Three counted failures, spaced past the backoff, degrade; reopening keeps it.
        let r = store
            .record(&outcome("b", refused()), &rule, at(0))
            .unwrap();
        assert_eq!(r.transition, Transition::Counted);
        let r = store
            .record(&outcome("b", refused()), &rule, at(30))
            .unwrap();
        assert_eq!(r.transition, Transition::Counted);
        let r = store
            .record(&outcome("b", refused()), &rule, at(90))
            .unwrap();
        assert_eq!(r.transition, Transition::Degraded);
        drop(store);
        let store = HealthStore::open(&path).unwrap();
        let degraded = store.degraded().unwrap();
        assert_eq!(degraded.len(), 1);
        assert_eq!(degraded[0].0, "b");
        assert!(degraded[0].1.error.contains("Connection refused"));
        assert_eq!(store.stats("b").unwrap().recent_errors[0].streak, 3);
        assert_eq!(store.connectors().unwrap(), vec!["a", "b"]);

        let r = store
            .record(&outcome("b", passed(4)), &rule, at(300))
            .unwrap();
        assert_eq!(r.transition, Transition::Recovered);
        assert!(store.degraded().unwrap().is_empty());
        assert_eq!(store.streak("b").unwrap(), Streak::default());

        store.forget("b").unwrap();
        assert!(store.records("b").unwrap().is_empty());
    }
}
