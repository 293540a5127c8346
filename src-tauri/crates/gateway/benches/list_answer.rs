//! Why the aggregate's server side answers a listing itself rather than through rmcp's server
//! (aggregate.rs says so): what one warm `tools/list` answer costs to produce, for 1 connector and
//! for 50 (7 tools each, as tests/bench/aggregate-list.sh lists them):
//! - `kept text`: the aggregate's way, the kept result's JSON text put in the envelope as it is;
//! - `rmcp typed`: what rmcp's `ServerHandler` path does with an answer, a typed
//!   `ListToolsResult` (cloned from one kept) serialized in its `ServerJsonRpcMessage`.
//!
//! Prints the medians and what 50 connectors add to each; asserts nothing.
//!
//!   cargo bench -p patchbay-gateway --bench list_answer

use rmcp::model::{ListToolsResult, NumberOrString, ServerJsonRpcMessage, ServerResult};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROUNDS: usize = 2000;

fn tools(connectors: usize) -> Value {
    let tools: Vec<Value> = (0..connectors)
        .flat_map(|c| {
            (0..7).map(move |i| {
                json!({
                    "name": format!("conn{c}__tool_{i}"),
                    "title": format!("Tool {i}"),
                    "description": format!("Connector {c}: does thing {i} for the user and returns \
                        a structured answer with a text summary of it, in some detail."),
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "What to act on"},
                            "count": {"type": "integer", "description": "How many"}
                        },
                        "required": ["name"]
                    }
                })
            })
        })
        .collect();
    json!({ "tools": tools })
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn time(mut produce: impl FnMut() -> usize) -> f64 {
    let samples = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            black_box(produce());
            started.elapsed()
        })
        .collect();
    median(samples)
}

fn main() {
    let mut figures = Vec::new();
    for connectors in [1, 50] {
        let value = tools(connectors);
        let text = value.to_string();
        let typed: ListToolsResult = serde_json::from_value(value).expect("a tools/list result");
        let kept = time(|| format!(r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#, 7, text).len());
        let rmcp = time(|| {
            let message = ServerJsonRpcMessage::response(
                ServerResult::ListToolsResult(typed.clone()),
                NumberOrString::Number(7),
            );
            serde_json::to_vec(&message).map_or(0, |v| v.len())
        });
        println!(
            "{connectors:>2} connector(s), {:>3} tools, {:>6} bytes: kept text {kept:.4} ms, rmcp typed {rmcp:.4} ms",
            connectors * 7,
            text.len()
        );
        figures.push((kept, rmcp));
    }
    let (one, fifty) = (figures[0], figures[1]);
    println!(
        "50 connectors add: kept text {:.4} ms, rmcp typed {:.4} ms (to the exchange itself)",
        fifty.0 - one.0,
        fifty.1 - one.1
    );
}
