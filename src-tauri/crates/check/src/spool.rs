//! The stdio bridge's calls on their way to the health board: appended as JSON lines to a spool
//! file beside the board (`health.calls.jsonl` beside `health.sqlite`), and moved onto the board
//! by whoever reads it next ([`crate::HealthStore`] drains the spool before each read).
//!
//! Why a file and not the database: a bridge runs for every client session, and writing SQLite
//! made the whole of SQLite's code resident in each of them (about 0.7 MiB, a tenth of the
//! bridge). Nothing here touches SQLite.
//!
//! Both sides hold an exclusive lock on the spool file while they touch it: a writer appends
//! (`O_APPEND`) under it, the drainer reads everything and truncates to zero under it, so a line
//! is never torn, read twice or lost between the two. The lock is held for one write or one read,
//! never across a database commit; a drain whose commit fails appends what it read back.

use crate::health::CallRecord;
use crate::{HealthError, TransportKind};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long either side waits for the other's lock (each holds it for one write or one read).
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// Past this size a writer drops calls rather than grow the spool (nobody has read the board
/// for tens of thousands of calls; the board keeps the last 100 per connector anyway).
pub const SPOOL_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The spool beside the health board `board` (`health.sqlite` → `health.calls.jsonl`).
pub fn spool_path(board: &Path) -> PathBuf {
    board.with_extension("calls.jsonl")
}

/// One call as a spool line: what [`CallRecord`] holds, in plain numbers.
#[derive(Serialize, Deserialize)]
struct SpooledCall {
    connector: String,
    at_ms: i64,
    latency_ms: u64,
    transport: TransportKind,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    error: Option<String>,
}

impl From<&CallRecord> for SpooledCall {
    fn from(call: &CallRecord) -> SpooledCall {
        SpooledCall {
            connector: call.connector.clone(),
            at_ms: call.at.timestamp_millis(),
            latency_ms: u64::try_from(call.latency.as_millis()).unwrap_or(u64::MAX),
            transport: call.transport,
            http_status: call.http_status,
            error: call.error.clone(),
        }
    }
}

impl SpooledCall {
    fn into_record(self) -> Option<CallRecord> {
        Some(CallRecord {
            connector: self.connector,
            at: DateTime::<Utc>::from_timestamp_millis(self.at_ms)?,
            latency: Duration::from_millis(self.latency_ms),
            transport: self.transport,
            http_status: self.http_status,
            error: self.error,
        })
    }
}

fn spool_error(action: &'static str, path: &Path, source: std::io::Error) -> HealthError {
    HealthError::Spool {
        action,
        path: path.display().to_string(),
        source,
    }
}

/// Takes the exclusive lock on `file`, waiting at most [`LOCK_TIMEOUT`]; released when `file`
/// is closed.
fn lock(file: &File, path: &Path) -> Result<(), HealthError> {
    let deadline = Instant::now() + LOCK_TIMEOUT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(HealthError::SpoolBusy {
                    path: path.display().to_string(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(spool_error("lock", path, e)),
        }
    }
}

/// Appends `calls` to the spool at `path` (created private when missing), one line each, in one
/// write. Calls past [`SPOOL_MAX_BYTES`] are dropped with [`HealthError::SpoolFull`].
pub fn append(path: &Path, calls: &[CallRecord]) -> Result<(), HealthError> {
    let mut text = Vec::with_capacity(calls.len() * 128);
    for call in calls {
        serde_json::to_writer(&mut text, &SpooledCall::from(call))
            .map_err(|e| spool_error("write", path, e.into()))?;
        text.push(b'\n');
    }
    append_bytes(path, &text)
}

fn append_bytes(path: &Path, text: &[u8]) -> Result<(), HealthError> {
    if text.is_empty() {
        return Ok(());
    }
    let mut options = OpenOptions::new();
    // Read access too: Windows locks only a handle that can read or write.
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| spool_error("open", path, e))?;
    lock(&file, path)?;
    let size = file
        .metadata()
        .map_err(|e| spool_error("read", path, e))?
        .len();
    if size + text.len() as u64 > SPOOL_MAX_BYTES {
        return Err(HealthError::SpoolFull {
            path: path.display().to_string(),
        });
    }
    file.write_all(text)
        .map_err(|e| spool_error("write", path, e))
}

/// What [`take`] found: the calls, and the lines it could not read (skipped).
#[derive(Debug, Default)]
pub struct Drained {
    pub calls: Vec<CallRecord>,
    pub unreadable: usize,
    /// The spool's text as read, for [`put_back`] when the calls cannot be written.
    text: Vec<u8>,
}

/// Empties the spool at `path`, returning what it held. A missing or empty spool costs one
/// `stat`.
pub fn take(path: &Path) -> Result<Drained, HealthError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > 0 => {}
        Ok(_) => return Ok(Drained::default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Drained::default()),
        Err(e) => return Err(spool_error("read", path, e)),
    }
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Drained::default()),
        Err(e) => return Err(spool_error("open", path, e)),
    };
    lock(&file, path)?;
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| spool_error("read", path, e))?;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .map_err(|e| spool_error("empty", path, e))?;
    drop(file);
    let mut drained = Drained::default();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<SpooledCall>(line)
            .ok()
            .and_then(SpooledCall::into_record)
        {
            Some(call) => drained.calls.push(call),
            None => drained.unreadable += 1,
        }
    }
    drained.text = text;
    Ok(drained)
}

/// Returns `drained`'s calls to the spool at `path` (their write to the board failed).
pub fn put_back(path: &Path, drained: Drained) -> Result<(), HealthError> {
    append_bytes(path, &drained.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(connector: &str, n: u64) -> CallRecord {
        CallRecord {
            connector: connector.into(),
            at: DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000 + n as i64).unwrap(),
            latency: Duration::from_millis(n),
            transport: TransportKind::StreamableHttp,
            http_status: n.is_multiple_of(3).then_some(502),
            error: n.is_multiple_of(3).then(|| format!("boom {n}")),
        }
    }

    #[test]
    fn the_spool_sits_beside_the_board() {
        assert_eq!(
            spool_path(Path::new("/d/health.sqlite")),
            Path::new("/d/health.calls.jsonl")
        );
    }

    #[test]
    fn calls_come_back_as_written_and_the_spool_is_left_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("health.calls.jsonl");
        assert!(take(&path).unwrap().calls.is_empty(), "no spool yet");
        let first: Vec<_> = (0..4).map(|n| call("a", n)).collect();
        let second: Vec<_> = (4..6).map(|n| call("b", n)).collect();
        append(&path, &first).unwrap();
        append(&path, &second).unwrap();
        let drained = take(&path).unwrap();
        assert_eq!(drained.calls, [first, second].concat());
        assert_eq!(drained.unreadable, 0);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        assert!(take(&path).unwrap().calls.is_empty(), "taken once only");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
    }

    #[test]
    fn a_garbled_line_is_skipped_and_counted_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("health.calls.jsonl");
        append(&path, &[call("a", 1)]).unwrap();
        append_bytes(&path, b"{\"connector\": 3}\nnot json\n").unwrap();
        append(&path, &[call("a", 2)]).unwrap();
        let drained = take(&path).unwrap();
        assert_eq!(drained.calls, vec![call("a", 1), call("a", 2)]);
        assert_eq!(drained.unreadable, 2);
    }

    #[test]
    fn calls_put_back_are_taken_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("health.calls.jsonl");
        append(&path, &[call("a", 1)]).unwrap();
        let drained = take(&path).unwrap();
        append(&path, &[call("a", 2)]).unwrap();
        put_back(&path, drained).unwrap();
        let again = take(&path).unwrap();
        assert_eq!(again.calls, vec![call("a", 2), call("a", 1)]);
    }

    #[test]
    fn a_full_spool_refuses_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("health.calls.jsonl");
        std::fs::write(&path, vec![b' '; SPOOL_MAX_BYTES as usize - 10]).unwrap();
        let err = append(&path, &[call("a", 1)]).unwrap_err();
        assert!(matches!(err, HealthError::SpoolFull { .. }), "{err}");
    }

    // Writers in several threads (each opening the file as a bridge process does) while a
    // drainer empties it: every call arrives exactly once.
    #[test]
    fn concurrent_writers_and_a_drainer_lose_and_repeat_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("health.calls.jsonl");
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for n in 0..200 {
                        append(&path, &[call(&format!("w{w}"), n)]).unwrap();
                    }
                })
            })
            .collect();
        let mut seen = Vec::new();
        while writers.iter().any(|w| !w.is_finished()) {
            seen.extend(take(&path).unwrap().calls);
        }
        for w in writers {
            w.join().unwrap();
        }
        seen.extend(take(&path).unwrap().calls);
        assert_eq!(seen.len(), 800);
        for w in 0..4 {
            let mine: Vec<u64> = seen
                .iter()
                .filter(|c| c.connector == format!("w{w}"))
                .map(|c| c.latency.as_millis() as u64)
                .collect();
            assert_eq!(
                mine,
                (0..200).collect::<Vec<_>>(),
                "writer {w} in order, once each"
            );
        }
    }
}
