//! Calls put on the health board off the request path: [`CallRecorder`] hands each call to a
//! thread of its own, which writes what has queued up in one transaction (a burst of calls is
//! one commit, a lone call is written at once). The stdio bridge answers its client on one
//! thread: writing there held every next request behind a commit. Dropping the recorder writes
//! what is still queued before it returns, so a session's last calls are not lost at exit.
//!
//! Where a batch goes is the recorder's sink: the board itself (the gateway, one long-lived
//! process) or the board's spool ([`CallRecorder::spool`], the stdio bridge: see
//! [`crate::spool`] for why).

use crate::health::{CallRecord, HealthStore};
use crate::HealthError;
use std::sync::mpsc;
use std::thread::JoinHandle;

/// The most calls written in one transaction.
const BATCH_MAX: usize = 256;

/// The health board's writer for calls (the gateway's and the stdio bridge's).
pub struct CallRecorder {
    queue: Option<mpsc::Sender<CallRecord>>,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for CallRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallRecorder")
    }
}

impl CallRecorder {
    /// Starts the writer on `store`; `what` names the writer in its warnings ("the gateway's
    /// calls").
    pub fn start(store: HealthStore, what: &'static str) -> Result<CallRecorder, HealthError> {
        CallRecorder::with_sink(move |batch| store.record_calls(batch), what)
    }

    /// The writer for the health board at `board` that never opens the board: calls go to its
    /// spool ([`crate::spool`]), which the board's next reader moves onto it.
    pub fn spool(board: &std::path::Path, what: &'static str) -> Result<CallRecorder, HealthError> {
        let spool = crate::spool::spool_path(board);
        CallRecorder::with_sink(move |batch| crate::spool::append(&spool, batch), what)
    }

    /// Starts the writer handing each batch to `sink`.
    fn with_sink(
        sink: impl Fn(&[CallRecord]) -> Result<(), HealthError> + Send + 'static,
        what: &'static str,
    ) -> Result<CallRecorder, HealthError> {
        let (queue, calls) = mpsc::channel::<CallRecord>();
        let writer = std::thread::Builder::new()
            .name("health-board".into())
            .spawn(move || {
                while let Ok(first) = calls.recv() {
                    let mut batch = vec![first];
                    batch.extend(calls.try_iter().take(BATCH_MAX - 1));
                    // Bounded by the store's busy timeout or the spool's lock timeout.
                    if let Err(e) = sink(&batch) {
                        tracing::warn!("cannot record {what} on the health board: {e}");
                    }
                }
            })
            .map_err(HealthError::Writer)?;
        Ok(CallRecorder {
            queue: Some(queue),
            writer: Some(writer),
        })
    }

    /// [`CallRecorder::start`] on the board in `file` (created when missing).
    pub fn open(file: &std::path::Path, what: &'static str) -> Result<CallRecorder, HealthError> {
        CallRecorder::start(HealthStore::open(file)?, what)
    }

    /// Queues `call` for the board; returns at once.
    pub fn record(&self, call: CallRecord) {
        if let Some(queue) = &self.queue {
            // The writer only stops once the queue is closed (below).
            let _ = queue.send(call);
        }
    }
}

impl Drop for CallRecorder {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TransportKind;
    use std::time::Duration;

    fn call(connector: &str, error: Option<&str>) -> CallRecord {
        CallRecord {
            connector: connector.into(),
            at: chrono::Utc::now(),
            latency: Duration::from_millis(3),
            transport: TransportKind::StreamableHttp,
            http_status: None,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn every_call_queued_is_on_the_board_once_the_recorder_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("health.sqlite");
        let recorder = CallRecorder::open(&file, "calls").unwrap();
        for i in 0..600 {
            recorder.record(call(
                if i % 2 == 0 { "a" } else { "b" },
                (i % 10 == 0).then_some("boom"),
            ));
        }
        drop(recorder);
        let board = HealthStore::open(&file).unwrap();
        let a = board.stats("a").unwrap();
        let b = board.stats("b").unwrap();
        // The ring keeps the last 100 per connector; every 10th call (all on "a") failed.
        assert_eq!((a.calls, b.calls), (100, 100), "{a:?} {b:?}");
        assert_eq!((a.failures, b.failures), (20, 0), "{a:?} {b:?}");
    }

    #[test]
    fn spooled_calls_reach_the_board_when_it_is_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("health.sqlite");
        let board = HealthStore::open(&file).unwrap();
        let recorder = CallRecorder::spool(&file, "calls").unwrap();
        for i in 0..30 {
            recorder.record(call("a", (i % 3 == 0).then_some("boom")));
        }
        drop(recorder);
        // The spooling writer never opened the database.
        let spool = crate::spool::spool_path(&file);
        assert!(std::fs::metadata(&spool).unwrap().len() > 0);
        // A store opened before the calls were spooled sees them on its next read.
        let a = board.stats("a").unwrap();
        assert_eq!((a.calls, a.failures), (30, 10), "{a:?}");
        assert_eq!(std::fs::metadata(&spool).unwrap().len(), 0, "drained");
        assert_eq!(board.stats("a").unwrap().calls, 30, "recorded once");
    }
}
