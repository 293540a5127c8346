//! The aggregate's calls: a name traced back to its connector, the request sent on that
//! connector's link (renewed, stepped up, its session begun again as the module doc says), the
//! outcome on the health board.

use super::*;

impl Aggregate {
    /// `tools/call`: the aggregate name back to its connector and tool; the connector's answer
    /// as it is, or a tool error saying why there is none.
    pub(super) async fn tools_call(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        params: Value,
    ) -> Result<Value, Value> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(rpc_error(INVALID_PARAMS, "tools/call needs params.name"));
        };
        let (connector, tool) = self
            .resolve(state, client, name, |n| &n.tools)
            .await
            .ok_or_else(|| rpc_error(INVALID_PARAMS, &format!("Unknown tool: {name}")))?;
        if !client.allows(&connector) {
            return Err(rpc_error(INVALID_PARAMS, &format!("Unknown tool: {name} (the gateway client \"{}\" may not use the connector {connector})", client.label)));
        }
        let mut params = params;
        params["name"] = Value::String(tool);
        match self.forward(state, &connector, "tools/call", params).await {
            Ok(answer) => answer,
            Err(message) => Ok(json!({
                "content": [{ "type": "text", "text": message }],
                "isError": true,
            })),
        }
    }

    pub(super) async fn prompts_get(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        params: Value,
    ) -> Result<Value, Value> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(rpc_error(INVALID_PARAMS, "prompts/get needs params.name"));
        };
        let (connector, prompt) = self
            .resolve(state, client, name, |n| &n.prompts)
            .await
            .filter(|(c, _)| client.allows(c))
            .ok_or_else(|| rpc_error(INVALID_PARAMS, &format!("Unknown prompt: {name}")))?;
        let mut params = params;
        params["name"] = Value::String(prompt);
        self.forward(state, &connector, "prompts/get", params)
            .await
            .unwrap_or_else(|message| Err(rpc_error(GATEWAY_ERROR, &message)))
    }

    pub(super) async fn resources_read(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        params: Value,
    ) -> Result<Value, Value> {
        let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
            return Err(rpc_error(INVALID_PARAMS, "resources/read needs params.uri"));
        };
        let lookup = |this: &Self| {
            this.names
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .resources
                .get(&uri)
                .cloned()
        };
        self.current_names(state).await;
        let connector = match lookup(self) {
            Some(c) => Some(c),
            None => {
                self.offered_refreshed(state, client).await;
                lookup(self)
            }
        };
        let Some(connector) = connector.filter(|c| client.allows(c)) else {
            return Err(
                json!({ "code": RESOURCE_NOT_FOUND, "message": format!("Resource not found: {uri}"), "data": { "uri": uri } }),
            );
        };
        self.forward(state, &connector, "resources/read", params)
            .await
            .unwrap_or_else(|message| Err(rpc_error(GATEWAY_ERROR, &message)))
    }

    /// An aggregate name back to (connector, its own name); listed again once when unknown (the
    /// gateway started after the client listed).
    pub(super) async fn resolve(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        name: &str,
        pick: fn(&Names) -> &ToolNames,
    ) -> Option<(String, String)> {
        let lookup = |this: &Self| {
            pick(&this.names.read().unwrap_or_else(|p| p.into_inner()))
                .resolve(name)
                .map(|(c, t)| (c.to_owned(), t.to_owned()))
        };
        self.current_names(state).await;
        if let Some(found) = lookup(self) {
            return Some(found);
        }
        self.offered_refreshed(state, client).await;
        lookup(self)
    }

    /// A request to `connector` on the client's behalf, recorded on the health board.
    /// `Ok(Ok(result))`, `Ok(Err(error))` (the connector's own JSON-RPC error), or `Err` with
    /// what to tell the client.
    pub(super) async fn forward(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        name: &str,
        method: &str,
        params: Value,
    ) -> Result<Result<Value, Value>, String> {
        let connector = self.connector(name);
        let started = Instant::now();
        let outcome = match state.upstream(name).await {
            Ok(upstream) => {
                self.request(state, &connector, &upstream, method, Some(params))
                    .await
            }
            Err(e) => Err(Failure::Resolve(e)),
        };
        let latency = started.elapsed();
        let (http_status, record_error, result) = match outcome {
            Ok(Err(error)) => {
                let said = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error")
                    .to_owned();
                (
                    Some(200),
                    Some(format!("{method} answered a JSON-RPC error: {said}")),
                    Ok(Err(error)),
                )
            }
            Ok(Ok(result)) => {
                let failed = result.get("isError") == Some(&Value::Bool(true));
                (
                    Some(200),
                    failed.then(|| format!("{method} answered isError")),
                    Ok(Ok(result)),
                )
            }
            Err(failure) => {
                let message = failure.message(name, method);
                tracing::warn!(connector = name, method, "{message}");
                if failure.is_absent() {
                    self.reconnect(state, &connector);
                }
                (failure.http_status(), Some(message.clone()), Err(message))
            }
        };
        state.record(CallRecord {
            connector: name.to_owned(),
            at: chrono::Utc::now(),
            latency,
            transport: TransportKind::StreamableHttp,
            http_status,
            error: record_error,
        });
        result
    }

    /// One request in the connector's session (begun when there is none): `Ok(Ok(result))`,
    /// `Ok(Err(error))` (the connector's own JSON-RPC error), or why there is no answer. The
    /// link replays only what cannot have run (after a renewal, a step-up, a lost session).
    pub(super) async fn request(
        &self,
        state: &Arc<GatewayState>,
        connector: &Arc<Connector>,
        upstream: &Arc<Upstream>,
        method: &str,
        params: Option<Value>,
    ) -> Result<Result<Value, Value>, Failure> {
        let bound = upstream.timeout().unwrap_or(state.options.default_timeout);
        let link = connector.link(state, upstream, bound).await?;
        self.on_link(connector, &link, method, params, bound).await
    }

    /// One request on `link`; a link that failed for good is forgotten (the next request
    /// begins another).
    pub(super) async fn on_link(
        &self,
        connector: &Arc<Connector>,
        link: &Link,
        method: &str,
        params: Option<Value>,
        bound: Duration,
    ) -> Result<Result<Value, Value>, Failure> {
        let outcome = link.request(method, params, bound).await;
        if let Err(failure) = &outcome {
            if failure.ends_link() || link.is_closed() {
                connector.forget(link.generation).await;
            }
        }
        outcome
    }
}
