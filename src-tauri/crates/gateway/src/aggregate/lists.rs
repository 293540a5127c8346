//! The aggregate's lists: each connector listed (in parallel, bounded), its last good lists kept
//! and refreshed in the background, the names built over them, and the answers rendered once per
//! set of connectors offered.

use super::*;

impl Aggregate {
    /// Lists every connector in `which` again, in parallel, each bounded; then the names.
    pub(super) async fn refresh(self: &Arc<Self>, state: &Arc<GatewayState>, which: &[InUse]) {
        let mut tasks = tokio::task::JoinSet::new();
        for c in which {
            let connector = self.connector(&c.name);
            // Away and being reconnected in the background: its last good lists serve, and a
            // listing does not wait on it again (a hanging server would cost every listing its
            // whole bound).
            if connector.reconnecting.load(Ordering::SeqCst) {
                continue;
            }
            let this = self.clone();
            let state = state.clone();
            tasks.spawn(async move {
                let started = Instant::now();
                if let Err(failure) = this.list_connector(&state, &connector).await {
                    this.listing_failed(&state, &connector, &failure, started.elapsed());
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Makes sure every connector in `offered` has lists to answer with: the cold ones are
    /// listed now (in parallel, each bounded); those no longer fresh are listed again in the
    /// background while their kept lists answer.
    pub(super) async fn ensure_listed(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        offered: &[InUse],
    ) {
        let now = Instant::now();
        let mut cold = Vec::new();
        let mut due = Vec::new();
        for c in offered {
            let connector = self.connector(&c.name);
            match connector.freshness(now) {
                Freshness::Cold => cold.push(c.clone()),
                Freshness::Stale
                    if !connector.reconnecting.load(Ordering::SeqCst)
                        && !connector.refreshing.swap(true, Ordering::SeqCst) =>
                {
                    due.push(c.clone())
                }
                Freshness::Stale | Freshness::Fresh => {}
            }
        }
        if !due.is_empty() {
            let this = self.clone();
            let state = state.clone();
            tokio::spawn(async move {
                this.refresh(&state, &due).await;
                for c in &due {
                    this.connector(&c.name)
                        .refreshing
                        .store(false, Ordering::SeqCst);
                }
            });
        }
        if !cold.is_empty() {
            self.refresh(state, &cold).await;
        }
    }

    /// One connector's tools, prompts and resources (those its capabilities declare), kept as
    /// its last good lists.
    pub(super) async fn list_connector(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        connector: &Arc<Connector>,
    ) -> Result<(), Failure> {
        let upstream = state
            .upstream(&connector.name)
            .await
            .map_err(Failure::Resolve)?;
        let bound = upstream.timeout().unwrap_or(LIST_TIMEOUT);
        // A change said from here on is not in these lists: it is heard anew.
        connector.changed.store(false, Ordering::SeqCst);
        let listing = async {
            let link = connector.link(state, &upstream, bound).await?;
            let capabilities = link.capabilities();
            let mut lists = Lists::default();
            // The shortest `ttlMs` any of its lists carries.
            let mut ttl: Option<Duration> = None;
            let mut take = |(items, said): (Vec<Value>, Option<Duration>)| {
                ttl = match (ttl, said) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                Some(items)
            };
            if capabilities.tools.is_some() {
                lists.tools = take(
                    self.list(connector, &link, "tools/list", "tools", bound)
                        .await?,
                );
            }
            if capabilities.prompts.is_some() {
                lists.prompts = take(
                    self.list(connector, &link, "prompts/list", "prompts", bound)
                        .await?,
                );
            }
            if capabilities.resources.is_some() {
                lists.resources = take(
                    self.list(connector, &link, "resources/list", "resources", bound)
                        .await?,
                );
            }
            let ttl = ttl.unwrap_or(LIST_TTL).clamp(MIN_LIST_TTL, MAX_LIST_TTL);
            lists.fresh_until = Some(Instant::now() + ttl);
            Ok::<Lists, Failure>(lists)
        };
        let lists = tokio::time::timeout(bound, listing)
            .await
            .unwrap_or(Err(Failure::TimedOut(bound)))?;
        *connector.lists.lock().unwrap_or_else(|p| p.into_inner()) = lists;
        self.lists_generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Every page of one list method, and the shortest `ttlMs` the pages carry.
    pub(super) async fn list(
        &self,
        connector: &Arc<Connector>,
        link: &Link,
        method: &str,
        key: &str,
        bound: Duration,
    ) -> Result<(Vec<Value>, Option<Duration>), Failure> {
        let mut items = Vec::new();
        let mut ttl: Option<Duration> = None;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let result = match self.on_link(connector, link, method, params, bound).await? {
                Ok(result) => result,
                Err(error) => {
                    return Err(Failure::Protocol(format!("it refused {method}: {error}")))
                }
            };
            if let Some(said) = result.get("ttlMs").and_then(Value::as_u64) {
                let said = Duration::from_millis(said);
                ttl = Some(ttl.map_or(said, |t| t.min(said)));
            }
            items.extend(
                result
                    .get(key)
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => break,
            }
        }
        Ok((items, ttl))
    }

    /// A connector could not be listed: said in the log and on the health board, and
    /// reconnected in the background unless nothing will change by asking again (its
    /// configuration, its credential, an answer that is not MCP). A listing may be sent again
    /// whatever became of it: it acts on nothing.
    pub(super) fn listing_failed(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        connector: &Arc<Connector>,
        failure: &Failure,
        latency: Duration,
    ) {
        let message = failure.message(&connector.name, "a listing");
        tracing::warn!(connector = connector.name, "{message}");
        state.record(CallRecord {
            connector: connector.name.clone(),
            at: chrono::Utc::now(),
            latency,
            transport: TransportKind::StreamableHttp,
            http_status: failure.http_status(),
            error: Some(message),
        });
        let transient = failure.is_absent()
            || matches!(
                failure,
                Failure::TimedOut(_) | Failure::Dropped(_) | Failure::SessionGone
            );
        if transient {
            self.reconnect(state, connector);
        }
    }

    /// Keep trying to list `connector` in the background until it answers (or stops being in
    /// use, or [`RECONNECT_FOR`] passes). One such task per connector.
    pub(super) fn reconnect(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        connector: &Arc<Connector>,
    ) {
        if connector.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        let state = state.clone();
        let connector = connector.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let mut delay = RECONNECT_FIRST;
            loop {
                tokio::time::sleep(delay).await;
                let in_use = this.in_use(&state).await;
                if !in_use.iter().any(|c| c.name == connector.name)
                    || started.elapsed() > RECONNECT_FOR
                {
                    break;
                }
                match this.list_connector(&state, &connector).await {
                    Ok(()) => {
                        tracing::info!(connector = connector.name, "reconnected");
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(
                            connector = connector.name,
                            "still away: {}",
                            e.message(&connector.name, "initialize")
                        );
                        delay = (delay * 2).min(RECONNECT_MAX);
                    }
                }
            }
            connector.reconnecting.store(false, Ordering::SeqCst);
        });
    }

    /// The names over every connector in use's last good lists (first listed wins a clash),
    /// built again when those lists or the connectors in use changed; their generation.
    pub(super) async fn current_names(&self, state: &Arc<GatewayState>) -> u64 {
        let in_use = self.in_use(state).await;
        // Read before the lists are: a list stored meanwhile makes the next call build again.
        let lists_generation = self.lists_generation.load(Ordering::SeqCst);
        let in_use_names: Vec<String> = in_use.iter().map(|c| c.name.clone()).collect();
        {
            let names = self.names.read().unwrap_or_else(|p| p.into_inner());
            if names
                .built_from
                .as_ref()
                .is_some_and(|(n, g)| *g == lists_generation && *n == in_use_names)
            {
                return names.generation;
            }
        }
        let lists: Vec<(String, Lists)> = in_use
            .iter()
            .map(|c| (c.name.clone(), self.connector(&c.name).lists()))
            .collect();
        let pairs = |pick: fn(&Lists) -> &Option<Vec<Value>>| -> Vec<(String, String)> {
            lists
                .iter()
                .flat_map(|(connector, l)| {
                    pick(l)
                        .iter()
                        .flatten()
                        .filter_map(|item| item.get("name").and_then(Value::as_str))
                        .map(|n| (connector.clone(), n.to_owned()))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let tools = pairs(|l| &l.tools);
        let prompts = pairs(|l| &l.prompts);
        let mut resources = HashMap::new();
        for (connector, l) in &lists {
            for uri in l
                .resources
                .iter()
                .flatten()
                .filter_map(|r| r.get("uri").and_then(Value::as_str))
            {
                resources
                    .entry(uri.to_owned())
                    .or_insert_with(|| connector.clone());
            }
        }
        let mut names = self.names.write().unwrap_or_else(|p| p.into_inner());
        let generation = names.generation + 1;
        *names = Names {
            tools: ToolNames::new(tools.iter().map(|(c, t)| (c.as_str(), t.as_str()))),
            prompts: ToolNames::new(prompts.iter().map(|(c, t)| (c.as_str(), t.as_str()))),
            resources,
            built_from: Some((in_use_names, lists_generation)),
            generation,
        };
        generation
    }

    /// The kept answer to `method` for `offered` from names of `generation`.
    pub(super) fn rendered(
        &self,
        method: &str,
        offered: &[InUse],
        generation: u64,
    ) -> Option<Arc<ListResult>> {
        self.rendered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|r| {
                r.method == method && r.names_generation == generation && r.offered == offered
            })
            .map(|r| r.result.clone())
    }

    /// Keep an answer (those from older names dropped; all of them past [`MAX_RENDERED`]).
    pub(super) fn keep_rendered(
        &self,
        method: &'static str,
        offered: Vec<InUse>,
        generation: u64,
        result: Arc<ListResult>,
    ) {
        let mut rendered = self.rendered.lock().unwrap_or_else(|p| p.into_inner());
        rendered.retain(|r| {
            r.names_generation == generation && !(r.method == method && r.offered == offered)
        });
        if rendered.len() >= MAX_RENDERED {
            rendered.clear();
        }
        rendered.push(Rendered {
            method,
            offered,
            names_generation: generation,
            result,
        });
    }

    /// The connectors `client` may use, listed again first (each bounded).
    pub(super) async fn offered_refreshed(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
    ) -> Vec<InUse> {
        let offered = self.offered(state, client).await;
        self.refresh(state, &offered).await;
        self.current_names(state).await;
        offered
    }

    /// `tools/list`, `prompts/list` or `resources/list`: the kept answer when the names it was
    /// built from still hold, else built from the kept lists (the cold ones asked first).
    pub(super) async fn list_answer(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        method: &'static str,
    ) -> Arc<ListResult> {
        let offered = self.offered(state, client).await;
        self.ensure_listed(state, &offered).await;
        let generation = self.current_names(state).await;
        if let Some(kept) = self.rendered(method, &offered, generation) {
            return kept;
        }
        let value = match method {
            "tools/list" => self.renamed_list(&offered, "tools", |l| l.tools, |n| &n.tools),
            "prompts/list" => self.renamed_list(&offered, "prompts", |l| l.prompts, |n| &n.prompts),
            _ => self.resources_list(&offered),
        };
        let text = value.to_string();
        let result = Arc::new(ListResult { value, text });
        self.keep_rendered(method, offered, generation, result.clone());
        result
    }

    /// `tools/list` or `prompts/list` (`key`): every offered connector's items from `list`,
    /// under their aggregate names from `names_of`.
    pub(super) fn renamed_list(
        &self,
        offered: &[InUse],
        key: &str,
        list: fn(Lists) -> Option<Vec<Value>>,
        names_of: fn(&Names) -> &ToolNames,
    ) -> Value {
        let names = self.names.read().unwrap_or_else(|p| p.into_inner());
        let mut items = Vec::new();
        for c in offered {
            for item in list(self.connector(&c.name).lists()).unwrap_or_default() {
                if let Some(item) = renamed(names_of(&names), c, item) {
                    items.push(item);
                }
            }
        }
        json!({ key: items })
    }

    pub(super) fn resources_list(&self, offered: &[InUse]) -> Value {
        let names = self.names.read().unwrap_or_else(|p| p.into_inner());
        let mut seen = HashSet::new();
        let mut resources = Vec::new();
        for c in offered {
            for resource in self
                .connector(&c.name)
                .lists()
                .resources
                .unwrap_or_default()
            {
                let Some(uri) = resource.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                // A URI two connectors offer is the first one's (the one reads go to).
                if names.resources.get(uri) == Some(&c.name) && seen.insert(uri.to_owned()) {
                    resources.push(with_title_prefix(resource, &c.title));
                }
            }
        }
        json!({ "resources": resources })
    }
}
