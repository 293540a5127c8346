//! The gateway's connections: each one the listeners accept is served by hyper (HTTP/1.1,
//! upgrades kept), with two bounds on what a client without the secret can hold.
//!
//! - A request's head must arrive within `header_read_timeout` (what `axum::serve` cannot set).
//! - At most `max_unproven` connections may be waiting for their first request's head at once;
//!   past it the one that has waited longest is closed to make room, once it has waited a
//!   quarter of a second; out of descriptors, every one that has waited that long goes. A real
//!   client sends its head with its connection, so it leaves that set within milliseconds and
//!   is never the one closed; 2,000 half-sent heads (no secret is needed to send one) cycle
//!   through it instead of holding the gateway's descriptors until each one's timeout.
//!
//! The cap is on the gateway as a whole, not per peer address: every peer of a loopback server
//! is 127.0.0.1 or ::1, so a per-address cap would be this one cap with another name. Once a
//! request's head is in, the gates decide: a refused request's answer carries
//! `Connection: close` (see `server::gates`), so a connection stays open only for a client that
//! holds a secret.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The bounds of [`accept`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub max_unproven: usize,
    /// However young, no more than this many wait: half the descriptors the process may open
    /// ([`ceiling_for`]), so a burst faster than [`MIN_WAIT`] cannot run the gateway out of them
    /// (then `accept` fails, the kernel's queue fills, and a real client's connection attempt
    /// is dropped and retried a second later).
    pub ceiling: usize,
}

/// [`ConnectionLimits::ceiling`] for `max_unproven`: half this process's open-file limit, at
/// least `max_unproven`.
pub(crate) fn ceiling_for(max_unproven: usize) -> usize {
    #[cfg(unix)]
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    #[cfg(not(unix))]
    let limit = (max_unproven as u64).saturating_mul(8);
    usize::try_from(limit / 2)
        .unwrap_or(usize::MAX)
        .clamp(max_unproven.max(1), 1 << 16)
}

/// A connection is closed to make room only after it has waited this long for its head: a real
/// client's head follows its connection within milliseconds, even on a busy machine, so one that
/// was accepted in the middle of a burst of half-sent heads is not taken for one of them.
const MIN_WAIT: Duration = Duration::from_millis(250);

/// The longest the listener waits for closing connections to free their descriptors before it
/// accepts again anyway.
const PAUSE_MAX: Duration = Duration::from_millis(500);

/// Connections accepted that have not sent a whole request head yet, oldest first; shared by
/// every listener of one gateway.
#[derive(Default)]
pub(crate) struct Unproven {
    next_id: u64,
    waiting: BTreeMap<u64, Waiting>,
    /// How many were closed to make room (said in the log at powers of two, not each time).
    evicted: u64,
    /// Told to close, their sockets not dropped yet (their tasks have not run since): they
    /// still hold descriptors, so they count against the ceiling until they are gone.
    closing: std::collections::HashSet<u64>,
}

struct Waiting {
    since: Instant,
    close: Arc<Notify>,
}

impl Unproven {
    /// Registers a new connection; returns its id and what closes it. While that makes more
    /// than `max` waiting, the oldest that has waited [`MIN_WAIT`] is told to close.
    fn admit(&mut self, max: usize, ceiling: usize, now: Instant) -> (u64, Arc<Notify>) {
        let id = self.next_id;
        self.next_id += 1;
        let close = Arc::new(Notify::new());
        self.waiting.insert(
            id,
            Waiting {
                since: now,
                close: close.clone(),
            },
        );
        self.close_oldest(max.max(1), now);
        while self.waiting.len() > ceiling.max(1) {
            self.close_first();
        }
        (id, close)
    }

    /// The gateway ran out of descriptors: every connection that has waited [`MIN_WAIT`] goes
    /// (one waiting that long is not a client about to send its head). How many went.
    fn make_room(&mut self, now: Instant) -> usize {
        let before = self.evicted;
        self.close_oldest(0, now);
        (self.evicted - before) as usize
    }

    /// Closes the oldest while more than `keep` wait, as long as they have waited [`MIN_WAIT`].
    fn close_oldest(&mut self, keep: usize, now: Instant) {
        while self.waiting.len() > keep {
            let waited_enough = self
                .waiting
                .first_key_value()
                .is_some_and(|(_, w)| now.saturating_duration_since(w.since) >= MIN_WAIT);
            if !waited_enough {
                break;
            }
            self.close_first();
        }
    }

    /// Closes the connection that has waited longest.
    fn close_first(&mut self) {
        let Some((id, oldest)) = self.waiting.pop_first() else {
            return;
        };
        self.closing.insert(id);
        // A permit is kept if the task is not waiting yet: it closes when it gets there.
        oldest.close.notify_one();
        self.evicted += 1;
        if self.evicted.is_power_of_two() {
            tracing::warn!(
                closed = self.evicted,
                "the gateway closed connections that sent no request head, to make room (a client that opens connections without using them)"
            );
        }
    }

    /// The connection `id` sent a request head: no longer a candidate for closing.
    fn proven(&mut self, id: u64) {
        self.waiting.remove(&id);
    }

    /// The connection `id` ended (its socket dropped), whether told to close or not.
    fn ended(&mut self, id: u64) {
        self.waiting.remove(&id);
        self.closing.remove(&id);
    }

    /// Whether accepting one more now would pass `ceiling` descriptors held by connections
    /// that wait or are being closed, with some of them about to be freed (connections only
    /// waiting are made room for by [`Self::admit`]).
    fn full(&self, ceiling: usize) -> bool {
        !self.closing.is_empty() && self.waiting.len() + self.closing.len() >= ceiling.max(1)
    }
}

fn lock(unproven: &Mutex<Unproven>) -> std::sync::MutexGuard<'_, Unproven> {
    unproven.lock().unwrap_or_else(|p| p.into_inner())
}

/// How many connections the kernel queues for `accept` (the default, 128, overflows when many
/// clients connect at once while the gateway is busy, and an overflow costs a client a 1 s SYN
/// retransmission; the kernel caps it at `net.core.somaxconn`, 4,096 by default since Linux
/// 5.4). Queued costs the kernel a little memory; dropped costs a client a second.
const ACCEPT_BACKLOG: u32 = 4096;

/// A listener on `addr` with [`ACCEPT_BACKLOG`].
pub(crate) fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // As `TcpListener::bind`: a restarted gateway gets its port back at once.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// Both ends of the connection a request came on, in its extensions (the consent asks who is
/// at the other end).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionEnds {
    pub(crate) peer: std::net::SocketAddr,
    pub(crate) local: std::net::SocketAddr,
}

/// Serves each connection `listener` accepts with `app`, under `limits`, until aborted.
pub(crate) async fn accept(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    unproven: Arc<Mutex<Unproven>>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        // Connections told to close still hold their descriptors until their tasks run (late,
        // on a loaded machine): accepting on would run the process out of them, and a real
        // client's connection would then be dropped from the kernel's queue and retried a
        // second later. Waiting a moment keeps it queued instead.
        let paused = Instant::now();
        let mut yields = 0u32;
        while lock(&unproven).full(limits.ceiling) && paused.elapsed() < PAUSE_MAX {
            // The closing tasks usually run at once: let them; a loaded machine gets a sleep.
            if yields < 64 {
                yields += 1;
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors, most likely: close the connections that only wait, then
                // give them a moment to close instead of spinning.
                let closed = lock(&unproven).make_room(Instant::now());
                tracing::warn!(closed, "the gateway cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Small JSON-RPC messages: do not wait to fill a segment.
        let _ = tcp.set_nodelay(true);
        let (id, close) =
            lock(&unproven).admit(limits.max_unproven, limits.ceiling, Instant::now());
        let app = hyper_util::service::TowerToHyperService::new(app.clone());
        let marks = unproven.clone();
        let ends = tcp
            .local_addr()
            .ok()
            .map(|local| ConnectionEnds { peer, local });
        let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
            lock(&marks).proven(id);
            if let Some(ends) = ends {
                req.extensions_mut().insert(ends);
            }
            hyper::service::Service::call(&app, req)
        });
        let unproven = unproven.clone();
        connections.spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let served = http
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                .with_upgrades();
            tokio::select! {
                served = served => {
                    if let Err(e) = served {
                        tracing::debug!("a gateway connection ended: {e}");
                    }
                }
                // Dropping the connection closes it.
                () = close.notified() => {}
            }
            lock(&unproven).ended(id);
        });
        // Reap the finished ones so the set does not grow with every connection ever served.
        while connections.try_join_next().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(close: &Notify) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(20), close.notified())
                .await
                .is_ok()
        })
    }

    #[test]
    fn past_the_cap_the_oldest_that_waited_long_enough_is_closed() {
        let t0 = Instant::now();
        let later = t0 + MIN_WAIT;
        let mut unproven = Unproven::default();
        let (first, close_first) = unproven.admit(2, 100, t0);
        let (_second, close_second) = unproven.admit(2, 100, t0);
        // The first sent its head: it is not a candidate any more.
        unproven.proven(first);
        let (_third, close_third) = unproven.admit(2, 100, t0);
        // Over the cap, but nobody has waited long enough: a burst does not close a real client
        // accepted in its middle.
        let (_fourth, _) = unproven.admit(2, 100, t0);
        assert_eq!(unproven.waiting.len(), 3);
        assert_eq!(unproven.evicted, 0);
        // Once they have waited, the next one accepted closes the oldest down to the cap.
        let (_fifth, close_fifth) = unproven.admit(2, 100, later);
        assert_eq!(unproven.waiting.len(), 2);
        assert_eq!(unproven.evicted, 2);
        assert!(told(&close_second) && told(&close_third));
        assert!(
            !told(&close_first),
            "a connection that sent its head is never closed"
        );
        assert!(!told(&close_fifth));
    }

    #[test]
    fn past_the_ceiling_the_oldest_goes_however_young() {
        let t0 = Instant::now();
        let mut unproven = Unproven::default();
        let (_, first) = unproven.admit(2, 3, t0);
        for _ in 0..3 {
            unproven.admit(2, 3, t0);
        }
        assert_eq!(unproven.waiting.len(), 3);
        assert!(told(&first));
        assert!(ceiling_for(256) >= 256);
    }

    #[test]
    fn a_connection_told_to_close_counts_until_it_has_ended() {
        let t0 = Instant::now();
        let mut unproven = Unproven::default();
        let (first, _) = unproven.admit(2, 2, t0);
        unproven.admit(2, 2, t0);
        assert!(!unproven.full(2), "only waiting: admit makes room");
        // Past the ceiling the oldest is told to close; its socket is still open.
        unproven.admit(2, 2, t0);
        assert_eq!(unproven.waiting.len(), 2);
        assert!(unproven.full(3), "two waiting and one closing hold three");
        unproven.ended(first);
        assert!(!unproven.full(3));
    }

    #[test]
    fn out_of_descriptors_every_connection_that_waited_goes() {
        let t0 = Instant::now();
        let mut unproven = Unproven::default();
        let (_, old) = unproven.admit(100, 100, t0);
        let (_, young) = unproven.admit(100, 100, t0 + MIN_WAIT);
        assert_eq!(unproven.make_room(t0 + MIN_WAIT), 1);
        assert!(told(&old) && !told(&young));
    }
}
