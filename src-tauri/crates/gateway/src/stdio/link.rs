//! The bridge's upstream: one rmcp streamable-HTTP transport owned by a pump task, which sends
//! what the bridge gives it and hands each response to whoever waits for it.

use super::*;

/// What the pump is asked to do with the transport.
pub(super) enum Command {
    Send(
        Box<ClientJsonRpcMessage>,
        oneshot::Sender<Result<(), StreamableHttpError<UpstreamHttpError>>>,
    ),
    Close(oneshot::Sender<()>),
    /// Ends a transport that never carried a message (nothing upstream to say goodbye to).
    Drop(oneshot::Sender<()>),
}

/// One rmcp streamable-HTTP transport to the upstream, owned by a task of its own (the pump):
/// it sends what the bridge gives it and hands each response to whoever waits for it, and
/// everything else the server sends to stdout.
pub(super) struct Link {
    commands: mpsc::UnboundedSender<Command>,
    /// Requests in flight by their id (as JSON text), waiting for the response.
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    alive: Arc<AtomicBool>,
    /// Whether the transport was handed a message: rmcp's `close` waits for a worker that only
    /// starts with the first one, so an unused transport is dropped, not closed.
    used: AtomicBool,
}

/// Removes a request's waiter however its wait ends (answered, failed, timed out).
pub(super) struct Waiting<'a> {
    link: &'a Link,
    key: String,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.link.waiting).remove(&self.key);
    }
}

/// A std mutex whose holder never awaits: a poisoned one is still usable.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Whether `answer` is the error rmcp makes up when a response stream ended before the
/// response (it marks its own with a process-local key in `data`): the server may have acted.
pub(super) fn is_stream_ended(answer: &Value) -> bool {
    answer
        .pointer("/error/data")
        .and_then(Value::as_object)
        .is_some_and(|data| data.contains_key("io.modelcontextprotocol/transportClosed"))
}

/// How rmcp reopens a stream that ended early (a response stream to resume, a 2025 server's
/// own stream): from 250 ms, doubling up to [`STREAM_BACKOFF_MAX`], [`STREAM_RETRIES`] times.
pub(crate) fn stream_backoff() -> Arc<ExponentialBackoff> {
    let mut backoff = ExponentialBackoff::default();
    backoff.base_duration = Duration::from_millis(250);
    backoff.max_delay = Some(STREAM_BACKOFF_MAX);
    backoff.max_times = Some(STREAM_RETRIES);
    Arc::new(backoff)
}

impl Link {
    pub(super) fn start<C: Credentials>(
        http: UpstreamHttp<C>,
        url: &str,
        out: mpsc::UnboundedSender<Out>,
    ) -> Arc<Link> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        config.retry_config = stream_backoff();
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let (commands, inbox) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            commands,
            waiting: Arc::default(),
            alive: Arc::new(AtomicBool::new(true)),
            used: AtomicBool::new(false),
        });
        tokio::spawn(pump(
            transport,
            inbox,
            link.waiting.clone(),
            link.alive.clone(),
            out,
        ));
        link
    }

    pub(super) fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Hands `message` to the transport; resolves once it was POSTed (and answered, for a
    /// request: its response comes to its waiter).
    pub(super) async fn send(&self, message: &Value) -> Result<(), Failure> {
        let typed: ClientJsonRpcMessage =
            serde_json::from_value(message.clone()).map_err(|e| Failure::Invalid(e.to_string()))?;
        let (done, sent) = oneshot::channel();
        self.used.store(true, Ordering::SeqCst);
        self.commands
            .send(Command::Send(Box::new(typed), done))
            .map_err(|_| Failure::Dropped("the upstream connection closed".into()))?;
        match sent.await {
            Ok(result) => result.map_err(Failure::from),
            Err(_) => Err(Failure::Dropped("the upstream connection closed".into())),
        }
    }

    /// Sends the request `message` (its `id` is `id`) and waits for its response.
    pub(super) async fn request(&self, message: &Value, id: &Value) -> Result<Value, Failure> {
        let key = id_key(id);
        let (tx, answer) = oneshot::channel();
        lock(&self.waiting).insert(key.clone(), tx);
        let _waiting = Waiting { link: self, key };
        self.send(message).await?;
        answer
            .await
            .map_err(|_| Failure::Dropped("the upstream connection closed".into()))
    }

    /// Ends the transport: rmcp deletes a 2025 session; waited for at most `goodbye`.
    pub(super) async fn close(&self, goodbye: Duration) {
        let (done, closed) = oneshot::channel();
        let command = if self.used.load(Ordering::SeqCst) {
            Command::Close(done)
        } else {
            Command::Drop(done)
        };
        if self.commands.send(command).is_ok() {
            let _ = tokio::time::timeout(goodbye, closed).await;
        }
    }
}

/// The transport's owner: sends what it is given (each send awaited on a task of its own, so
/// one slow POST holds up nothing), routes what the server sends. Ends when the transport does
/// (its worker failed for good) or when asked to close.
pub(super) async fn pump<C: Credentials>(
    mut transport: StreamableHttpClientTransport<UpstreamHttp<C>>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    alive: Arc<AtomicBool>,
    out: mpsc::UnboundedSender<Out>,
) {
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Send(message, done)) => {
                    let sending = transport.send(*message);
                    tokio::spawn(async move {
                        let _ = done.send(sending.await);
                    });
                }
                Some(Command::Close(done)) => {
                    alive.store(false, Ordering::SeqCst);
                    let _ = transport.close().await;
                    let _ = done.send(());
                    break;
                }
                Some(Command::Drop(done)) => {
                    alive.store(false, Ordering::SeqCst);
                    let _ = done.send(());
                    break;
                }
                None => {
                    alive.store(false, Ordering::SeqCst);
                    let _ = transport.close().await;
                    break;
                }
            },
            message = transport.receive() => {
                let Some(message) = message else {
                    tracing::debug!("the upstream transport ended");
                    alive.store(false, Ordering::SeqCst);
                    break;
                };
                let Ok(message) = serde_json::to_value(&message) else {
                    continue;
                };
                let waiter = message
                    .get("id")
                    .filter(|_| is_response(&message))
                    .and_then(|id| lock(&waiting).remove(&id_key(id)));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(message);
                    }
                    None => emit_to(&out, &message),
                }
            }
        }
    }
    // Whoever still waits on this transport waits in vain: their senders go.
    lock(&waiting).clear();
}
