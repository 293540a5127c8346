//! Tool names on the aggregate endpoint: connector and tool names as upstream servers list them,
//! mapped to one valid name and back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_gateway::names::{aggregate_tool_name, ToolNames, MAX_LEN};

fuzz_target!(|data: &[u8]| {
    let fields = patchbay_fuzz::fields(data);
    let pairs: Vec<(&str, &str)> = fields
        .chunks(2)
        .map(|p| (p[0].as_str(), p.get(1).map_or("", String::as_str)))
        .collect();
    for (connector, tool) in &pairs {
        let name = aggregate_tool_name(connector, tool);
        // Valid for the model APIs after the clients' `mcp__patchbay__` prefix.
        assert!(!name.is_empty() && name.len() <= MAX_LEN, "{name:?}");
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        assert_eq!(name, aggregate_tool_name(connector, tool));
    }
    let names = ToolNames::new(pairs.iter().copied());
    for (connector, tool) in &pairs {
        let (c, t) = names
            .resolve(&aggregate_tool_name(connector, tool))
            .expect("every listed pair resolves");
        // The way back gives the pair (or, on a hash collision, the first pair with that name).
        assert_eq!(
            aggregate_tool_name(c, t),
            aggregate_tool_name(connector, tool)
        );
    }
});
