//! The gateway's aggregate endpoint (`/mcp`) end to end, real parts on loopback: two MCP servers
//! behind `patchbay gateway serve` — the MCP SDK's example OAuth server
//! (tests/node/sdk-oauth-expiring-server.mjs, authorized through `patchbay authorize` with the
//! browser stand-in) as `sdk`, and the SDK's plain example (tests/node/sdk-example-server.mjs) as
//! `demo` — and the MCP SDK's own client (tests/node/aggregate-client.mjs,
//! `StreamableHTTPClientTransport` with a gateway client's secret) seeing both as one server:
//! tools and prompts named `<connector>__<name>`, resources merged, calls reaching each. Then
//! `demo` stops: its tools stay listed and a call says "unavailable, retrying" within a bound;
//! it starts again on the same port and the next call works; so does the next call after the
//! gateway itself restarts mid-session. The gates hold for `/mcp` too, and
//! Claude Code pointed at `/mcp` lists it Connected; so does Gemini CLI with the object
//! `gateway client add --json` prints pasted into its settings and Cursor's, which adds no
//! connector.

use patchbay_e2e::clients::gemini_mcp_list_in;
use patchbay_e2e::peers::{
    add_client, authorize, claude_mcp_list, raw_http, text_of, OAuthServer, SdkClient, Serving,
    INITIALIZE, STEP,
};
use patchbay_e2e::sdk_servers::SdkServer;
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{require_keychain, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How soon a call to a connector that is away must say so (a refused connection is instant
/// on loopback; the gateway must not wait out its retries or the connector's timeout).
const UNAVAILABLE_WITHIN_MS: u64 = 5_000;

fn greet(tool: &str, who: &str) -> Value {
    json!({ "op": "call", "name": tool, "arguments": { "name": who } })
}

#[test]
fn the_sdk_client_sees_every_connector_as_one_server_and_an_absent_one_stays_listed() {
    require_keychain!();
    let mut oauth = OAuthServer::start("sdk-oauth-expiring-server.mjs");
    let demo = SdkServer::streamable_http();
    let demo_port = demo.port;
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "sdk": { "type": "http", "url": oauth.mcp_url(), "title": "SDK OAuth" },
            "demo": { "type": "http", "url": demo.url(), "title": "Demo", "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let authorized = authorize(&sandbox, &catalog, "sdk");
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "aggregate-e2e", gateway.port, &[]);
    let (mut client, connected) =
        SdkClient::connect("aggregate-client.mjs", &gateway.aggregate_url(), &headers);
    assert_eq!(
        connected["event"],
        "connected",
        "{connected}\n{}",
        gateway.output()
    );
    assert_eq!(connected["server"]["name"], "patchbay");
    assert!(connected["session"].is_string(), "{connected}");
    for capability in ["tools", "resources", "prompts"] {
        assert!(
            connected["capabilities"][capability].is_object(),
            "{connected}"
        );
    }

    // Every connector's tools, named <connector>__<tool>, described with the connector's title.
    let listed = client.ask(json!({ "op": "list" }));
    assert_eq!(listed["ok"], true, "{listed}\n{}", gateway.output());
    let tools = listed["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {listed}\n{}", gateway.output()))
    };
    assert_eq!(
        tool("sdk__greet")["description"],
        "SDK OAuth: A simple greeting tool"
    );
    assert_eq!(
        tool("demo__greet")["description"],
        "Demo: A simple greeting tool"
    );
    assert_eq!(tool("demo__greet")["title"], "Demo: Greeting Tool");
    tool("sdk__multi-greet");
    assert!(
        tools.iter().all(|t| {
            let name = t["name"].as_str().unwrap();
            name.starts_with("sdk__") || name.starts_with("demo__")
        }),
        "{listed}"
    );

    // A call reaches each connector with the tool's own name.
    let called = client.ask(greet("sdk__greet", "Ada"));
    assert_eq!(called["ok"], true, "{called}\n{}", gateway.output());
    assert_eq!(text_of(&called), "Hello, Ada!", "{called}");
    let called = client.ask(greet("demo__greet", "Grace"));
    assert_eq!(called["ok"], true, "{called}");
    assert_eq!(text_of(&called), "Hello, Grace!", "{called}");

    // The access token lapses mid-session: the gateway renews it once and replays the call.
    let refreshed = oauth.stdout_lines("REFRESHED");
    oauth.expire_tokens();
    let called = client.ask(greet("sdk__greet", "Lovelace"));
    assert_eq!(
        text_of(&called),
        "Hello, Lovelace!",
        "{called}\n{}",
        gateway.output()
    );
    assert_eq!(
        oauth.stdout_lines("REFRESHED"),
        refreshed + 1,
        "renewed once through the refresher: {}",
        oauth.output()
    );

    // Prompts are named like tools; resources keep their URIs (both servers offer the same
    // ones: listed once, read from the first connector).
    let prompts = client.ask(json!({ "op": "prompts" }));
    assert_eq!(prompts["ok"], true, "{prompts}");
    let prompt_names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        prompt_names.contains(&"sdk__greeting-template")
            && prompt_names.contains(&"demo__greeting-template"),
        "{prompts}"
    );
    let prompt = client.ask(json!({ "op": "prompt", "name": "demo__greeting-template",
        "arguments": { "name": "Alan" } }));
    assert_eq!(prompt["ok"], true, "{prompt}");
    assert!(
        prompt["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Alan"),
        "{prompt}"
    );
    let resources = client.ask(json!({ "op": "resources" }));
    assert_eq!(resources["ok"], true, "{resources}");
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let greeting = "https://example.com/greetings/default";
    assert_eq!(
        uris.iter().filter(|u| **u == greeting).count(),
        1,
        "{resources}"
    );
    let read = client.ask(json!({ "op": "read", "uri": greeting }));
    assert_eq!(read["ok"], true, "{read}");
    assert_eq!(read["result"]["contents"][0]["text"], "Hello, world!");

    // `demo` goes away: its tools stay listed, and a call says it is unavailable at once.
    drop(demo);
    let names = client.tool_names();
    assert!(
        names.contains(&"demo__greet".to_owned()) && names.contains(&"sdk__greet".to_owned()),
        "{names:?}"
    );
    let away = client.ask(greet("demo__greet", "Nobody"));
    assert_eq!(
        away["ok"], true,
        "a tool error, not a protocol error: {away}"
    );
    assert_eq!(away["result"]["isError"], true, "{away}");
    assert!(
        text_of(&away).starts_with("demo is unavailable, retrying"),
        "{away}"
    );
    assert!(
        away["ms"].as_u64().unwrap() < UNAVAILABLE_WITHIN_MS,
        "answered within {UNAVAILABLE_WITHIN_MS} ms: {away}"
    );
    // The other connector is untouched.
    let called = client.ask(greet("sdk__greet", "still"));
    assert_eq!(text_of(&called), "Hello, still!", "{called}");

    // It comes back on the same port (its sessions forgotten): the next call works.
    let demo = SdkServer::start("simpleStreamableHttp.js", &[], demo_port, false);
    let called = client.ask(greet("demo__greet", "again"));
    assert_eq!(
        text_of(&called),
        "Hello, again!",
        "{called}\ngateway:\n{}\nserver:\n{}",
        gateway.output(),
        demo.output()
    );
    assert!(
        gateway
            .output()
            .contains("the aggregate's session with it ended; beginning it again"),
        "{}",
        gateway.output()
    );

    // The gateway itself restarts (the app was restarted): the client's session goes on, and
    // the names resolve again from fresh lists.
    let port = gateway.port;
    drop(gateway);
    let gateway = Serving::start_on(&sandbox, &catalog, port);
    let called = client.ask(greet("demo__greet", "anew"));
    assert_eq!(
        text_of(&called),
        "Hello, anew!",
        "{called}\n{}",
        gateway.output()
    );

    // Every call reached the health board, the failed one as failed.
    let health = patchbay_check::HealthStore::open(&sandbox.path().join("health.sqlite")).unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        let demo_calls = health.records("demo").unwrap_or_default();
        let sdk_calls = health.records("sdk").unwrap_or_default();
        let done = demo_calls.iter().filter(|c| c.ok).count() >= 4
            && demo_calls.iter().any(|c| !c.ok)
            && sdk_calls.iter().filter(|c| c.ok).count() >= 3;
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "calls on the health board: demo {demo_calls:?} sdk {sdk_calls:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let closed = client.ask(json!({ "op": "close" }));
    assert_eq!(closed["ok"], true, "{closed}");
    // The client never saw a token: its only credential is the gateway secret.
    assert!(
        !gateway.output().contains("Bearer "),
        "{}",
        gateway.output()
    );
    SecretScan::new(sandbox.path())
        .issued_by("the SDK OAuth server", &oauth)
        .issued_by("the open demo server", &demo)
        .gateway_client("aggregate-e2e", &headers)
        .text("patchbay authorize", &authorized)
        .text("patchbay gateway serve", gateway.output())
        .assert_clean();
}

#[test]
fn the_aggregate_keeps_the_gates_and_a_limited_client_to_its_connectors() {
    let alpha = SdkServer::streamable_http();
    let beta = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "alpha": { "type": "http", "url": alpha.url(), "headers": { "X-Api-Key": "k" } },
            "beta": { "type": "http", "url": beta.url(), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let everything = add_client(&sandbox, "all", gateway.port, &[]);
    let limited = add_client(&sandbox, "only-alpha", gateway.port, &["--only", "alpha"]);
    let secret = |h: &Value| h["Authorization"].as_str().unwrap().to_owned();

    // No secret, an unknown one: 401 before anything is contacted. A foreign Origin: 403.
    let (status, _) = raw_http(gateway.port, "POST", "/mcp", &[], INITIALIZE);
    assert_eq!(status, 401);
    let (status, _) = raw_http(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", "Bearer pbgw_not-a-client")],
        INITIALIZE,
    );
    assert_eq!(status, 401);
    let (status, _) = raw_http(
        gateway.port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &secret(&everything)),
            ("Origin", "https://evil.example"),
        ],
        INITIALIZE,
    );
    assert_eq!(status, 403);
    // With the secret: the aggregate's own initialize, a session id, JSON.
    let (status, answer) = raw_http(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        INITIALIZE,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("mcp-session-id: "),
        "{answer}"
    );
    assert!(answer.contains(r#""name":"patchbay""#), "{answer}");
    // No server stream (405); a session it never issued is served (a client whose gateway
    // restarted goes on); an unknown method is -32601.
    let (status, _) = raw_http(
        gateway.port,
        "GET",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        "",
    );
    assert_eq!(status, 405);
    let (status, answer) = raw_http(
        gateway.port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &secret(&everything)),
            ("Mcp-Session-Id", "forgotten"),
        ],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("alpha__greet"), "{answer}");
    let (status, answer) = raw_http(
        gateway.port,
        "POST",
        "/mcp",
        &[("Authorization", &secret(&everything))],
        r#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage"}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("-32601"), "{answer}");

    // Everything for the unlimited client; only alpha's tools for the limited one, whose call to
    // beta's tool is refused.
    let (mut all, connected) = SdkClient::connect(
        "aggregate-client.mjs",
        &gateway.aggregate_url(),
        &everything,
    );
    assert_eq!(connected["event"], "connected", "{connected}");
    let names = all.tool_names();
    assert!(
        names.contains(&"alpha__greet".to_owned()) && names.contains(&"beta__greet".to_owned()),
        "{names:?}\n{}",
        gateway.output()
    );
    let (mut only, connected) =
        SdkClient::connect("aggregate-client.mjs", &gateway.aggregate_url(), &limited);
    assert_eq!(connected["event"], "connected", "{connected}");
    let names = only.tool_names();
    assert!(names.contains(&"alpha__greet".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("alpha__")), "{names:?}");
    let refused = only.ask(greet("beta__greet", "Eve"));
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("may not use the connector beta"),
        "{refused}"
    );
    let called = only.ask(greet("alpha__greet", "Ada"));
    assert_eq!(text_of(&called), "Hello, Ada!", "{called}");
    let unknown = all.ask(greet("alpha__no_such_tool", "x"));
    assert_eq!(unknown["ok"], false, "{unknown}");
    assert!(
        unknown["error"].as_str().unwrap().contains("Unknown tool"),
        "{unknown}"
    );
    SecretScan::new(sandbox.path())
        .gateway_client("all", &everything)
        .gateway_client("only-alpha", &limited)
        .text("patchbay gateway serve", gateway.output())
        .assert_clean();
}

#[test]
fn claude_code_lists_the_aggregate_as_connected() {
    let demo = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "catalog.json",
        &json!({ "mcpServers": {
            "demo": { "type": "http", "url": demo.url(), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start(&sandbox, &catalog);
    let headers = add_client(&sandbox, "claude-code", gateway.port, &[]);

    // Claude Code (its own home in the sandbox) with the entry `gateway client add --json`
    // describes, as `claude mcp add --transport http patchbay URL --header ...` writes it.
    let claude = sandbox.path().join("claude-home");
    std::fs::create_dir_all(&claude).unwrap();
    let entry = json!({ "type": "http", "url": gateway.aggregate_url(), "headers": headers });
    std::fs::write(
        claude.join(".claude.json"),
        json!({ "mcpServers": { "patchbay": entry } }).to_string(),
    )
    .unwrap();
    let list = claude_mcp_list(&claude);
    let line = list
        .lines()
        .find(|l| l.starts_with("patchbay: "))
        .unwrap_or_else(|| panic!("no patchbay in `claude mcp list`:\n{list}"));
    assert_eq!(
        line,
        format!("patchbay: {} (HTTP) - ✔ Connected", gateway.aggregate_url()),
        "{list}\n{}",
        gateway.output()
    );
    SecretScan::new(sandbox.path())
        .gateway_client("claude-code", &headers)
        .text("patchbay gateway serve", gateway.output())
        .text("claude mcp list", &list)
        .excluding(
            &claude,
            "Claude Code's home, where the test wrote the gateway client's header as `claude \
             mcp add --header` would: the client holding its gateway secret is the point",
        )
        .assert_clean();
}

/// The aggregate's tool names as the SDK's client lists them, and the median of five listings'
/// times in milliseconds.
fn timed_listing(client: &mut SdkClient) -> (Vec<String>, u128) {
    let mut names = Vec::new();
    let mut times: Vec<u128> = (0..5)
        .map(|_| {
            let started = Instant::now();
            names = client.tool_names();
            started.elapsed().as_millis()
        })
        .collect();
    times.sort_unstable();
    (names, times[2])
}

/// What `gateway client add gemini --json` prints, pasted as `patchbay` into Gemini CLI's
/// settings and Cursor's `mcp.json` (the obvious thing to do with it): Gemini CLI 0.61.0 lists
/// it Connected, and Patchbay counts it as no connector (none in `status`, no `patchbay__…`
/// among the aggregate's tools, the listing as quick as before the paste: both medians printed,
/// not asserted), and the gateway's log does not grow with it.
#[test]
fn the_pasted_aggregate_in_gemini_and_cursor_is_connected_and_adds_no_connector() {
    let demo = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    let home = sandbox.path().join("home");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    // The user's catalog, no `--catalog`: the clients' configs count (where the loop came from).
    sandbox.write(
        "mcp.json",
        &json!({ "mcpServers": {
            "demo": { "type": "http", "url": demo.url(), "headers": { "X-Api-Key": "k" } }
        } })
        .to_string(),
    );
    let gateway = Serving::start_in_home(&sandbox, &home);
    let headers = add_client(&sandbox, "gemini", gateway.port, &[]);
    let (mut client, connected) =
        SdkClient::connect("aggregate-client.mjs", &gateway.aggregate_url(), &headers);
    assert_eq!(connected["event"], "connected", "{connected}");
    let (before, before_ms) = timed_listing(&mut client);
    assert!(before.contains(&"demo__greet".to_owned()), "{before:?}");

    let pasted = json!({ "mcpServers": { "patchbay": {
        "url": gateway.aggregate_url(), "headers": headers } } });
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), pasted.to_string()).unwrap();
    std::fs::write(home.join(".cursor/mcp.json"), pasted.to_string()).unwrap();
    let logged_before = gateway.output().lines().count();

    let listed = gemini_mcp_list_in(&home, &home);
    let line = listed
        .lines()
        .find(|l| l.contains("patchbay:"))
        .unwrap_or_else(|| panic!("no patchbay in `gemini mcp list`:\n{listed}"));
    assert!(
        line.contains("Connected") && !line.contains("Disconnected"),
        "{listed}\n{}",
        gateway.output()
    );
    let (after, after_ms) = timed_listing(&mut client);
    println!(
        "aggregate tools/list median of 5: {before_ms} ms before the paste, {after_ms} ms after"
    );
    assert_eq!(after, before, "the paste adds no tools");

    let out = sandbox
        .command()
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .current_dir(&home)
        .args(["status", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let names: Vec<&str> = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["demo"], "{report:#}");

    // Gemini's own few requests at info, not a loop's thousands.
    let logged = gateway.output().lines().count() - logged_before;
    assert!(logged < 50, "{logged} lines logged:\n{}", gateway.output());
    SecretScan::new(sandbox.path())
        .gateway_client("gemini", &headers)
        .text("patchbay gateway serve", gateway.output())
        .text("gemini mcp list", &listed)
        .excluding(
            &home,
            "Gemini's and Cursor's configs, where the test pasted the gateway client's header: \
             the client holding its gateway secret is the point",
        )
        .assert_clean();
}
