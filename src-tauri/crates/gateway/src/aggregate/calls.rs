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
        let (connector, params) = self
            .renamed(state, client, params, "tools/call", |n| &n.tools)
            .await?;
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
        let (connector, params) = self
            .renamed(state, client, params, "prompts/get", |n| &n.prompts)
            .await?;
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
        let connector = self
            .find(state, client, |names| names.resources.get(&uri).cloned())
            .await;
        let Some(connector) = connector.filter(|c| client.allows(c)) else {
            return Err(
                json!({ "code": RESOURCE_NOT_FOUND, "message": format!("Resource not found: {uri}"), "data": { "uri": uri } }),
            );
        };
        self.forward(state, &connector, "resources/read", params)
            .await
            .unwrap_or_else(|message| Err(rpc_error(GATEWAY_ERROR, &message)))
    }

    /// A `tools/call` or `prompts/get`: its aggregate `params.name` back to (connector, params
    /// with the connector's own name), or the JSON-RPC error for a name not known here or a
    /// connector this gateway client may not use.
    async fn renamed(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        mut params: Value,
        method: &str,
        pick: fn(&Names) -> &ToolNames,
    ) -> Result<(String, Value), Value> {
        let kind = if method == "tools/call" {
            "tool"
        } else {
            "prompt"
        };
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(rpc_error(
                INVALID_PARAMS,
                &format!("{method} needs params.name"),
            ));
        };
        let found = self
            .find(state, client, |names| {
                pick(names)
                    .resolve(&name)
                    .map(|(c, own)| (c.to_owned(), own.to_owned()))
            })
            .await;
        let Some((connector, own)) = found else {
            return Err(rpc_error(
                INVALID_PARAMS,
                &format!("Unknown {kind}: {name}"),
            ));
        };
        if !client.allows(&connector) {
            return Err(rpc_error(INVALID_PARAMS, &format!("Unknown {kind}: {name} (the gateway client \"{}\" may not use the connector {connector})", client.label)));
        }
        params["name"] = Value::String(own);
        Ok((connector, params))
    }

    /// `lookup` over the names as they are now; listed again once when it finds nothing (the
    /// gateway started after the client listed, or a connector came into use).
    async fn find<T>(
        self: &Arc<Self>,
        state: &Arc<GatewayState>,
        client: &ClientRecord,
        lookup: impl Fn(&Names) -> Option<T>,
    ) -> Option<T> {
        let looked = |this: &Self| lookup(&this.names.read().unwrap_or_else(|p| p.into_inner()));
        self.current_names(state).await;
        if let Some(found) = looked(self) {
            return Some(found);
        }
        self.offered_refreshed(state, client).await;
        looked(self)
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
