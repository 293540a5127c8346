//! `patchbay-bridge --handoff-fd N`: the lean stdio bridge `patchbay connect` execs into. It reads
//! the resolved connector from descriptor N (a pipe `patchbay connect` wrote and left open across
//! the exec), then bridges stdin/stdout to it (`patchbay_gateway::stdio::run_handoff`), renewing
//! through `patchbay connect --renew NAME`. Not meant to be run by hand.

use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `RUST_LOG` as targets and levels (`warn,patchbay_gateway=debug`): a `Targets` filter, not
    // an `EnvFilter`, whose span and field matching would link a regex engine into the process
    // every client session runs.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|text| text.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| {
            "warn,patchbay_bridge=info,patchbay_gateway=info"
                .parse()
                .expect("a valid default filter")
        });
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(filter)
        .try_init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("patchbay-bridge: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fd = match args.as_slice() {
        [flag, fd] if flag == "--handoff-fd" => fd
            .parse::<u32>()
            .map_err(|_| format!("--handoff-fd takes a descriptor number, not {fd:?}"))?,
        _ => return Err("run by `patchbay connect NAME`, not by hand".into()),
    };
    // The inherited descriptor, opened by name: no unsafe adoption of a raw descriptor.
    let mut text = String::new();
    std::fs::File::open(format!("/dev/fd/{fd}"))
        .and_then(|mut pipe| pipe.read_to_string(&mut text))
        .map_err(|e| format!("cannot read the handoff on descriptor {fd}: {e}"))?;
    let handoff: patchbay_gateway::stdio::Handoff =
        serde_json::from_str(&text).map_err(|e| format!("the handoff is not readable: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(patchbay_gateway::stdio::run_handoff(handoff))
        .map_err(|e| e.to_string())
}
