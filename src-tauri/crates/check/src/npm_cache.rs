//! npm caches for checked `npx` servers. npx keys its install directory (`_npx/<hash>`) on the
//! package spec alone, so two servers running the byte-identical `npx -y <pkg>@latest` resolve to
//! the same directory and, when checked at once on a cold cache, race to populate it (the seed's
//! ENOTEMPTY). Every npx server checked by Patchbay gets `npm_config_cache` pointing into the data
//! directory's cache, one directory per package spec; servers that share a spec each get their
//! own directory beside it, so there is nothing to race over. Patchbay's caches are also apart
//! from `~/.npm`, where the agent runtimes' own npx starts install.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable npm reads its cache directory from.
pub const NPM_CACHE_ENV: &str = "npm_config_cache";

/// The package spec an `npx` (or `npm exec` / `npm x`) command runs, e.g. `@scope/pkg@latest`;
/// `None` for anything else. `--package`/`-p` names it explicitly; otherwise it is the first
/// argument that is not an option.
pub fn npx_package_spec(command: &str, args: &[String]) -> Option<String> {
    let program = Path::new(command)
        .file_name()?
        .to_str()?
        .to_ascii_lowercase();
    let program = program
        .strip_suffix(".cmd")
        .or_else(|| program.strip_suffix(".exe"))
        .unwrap_or(&program);
    let rest: &[String] = match program {
        "npx" => args,
        "npm" => match args.first().map(String::as_str) {
            Some("exec" | "x") => &args[1..],
            _ => return None,
        },
        _ => return None,
    };
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        if let Some(spec) = arg.strip_prefix("--package=") {
            return Some(spec.to_owned());
        }
        match arg.as_str() {
            "-p" | "--package" => return iter.next().cloned(),
            "--" => return iter.next().cloned(),
            // Options npx takes a value for.
            "-c" | "--call" | "--cache" | "--userconfig" | "--registry" => {
                iter.next();
            }
            a if a.starts_with('-') => {}
            spec => return Some(spec.to_owned()),
        }
    }
    None
}

/// A directory name that is safe everywhere and still readable: the text's safe characters,
/// then a short hash of the whole so different texts never collide.
fn slug(text: &str) -> String {
    let readable: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let digest = Sha256::digest(text.as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{hash}", readable.trim_matches('.'))
}

/// The cache directory of each npx server among `servers` (name, command, args), under `root`:
/// `<root>/<spec>` when the server is the only one running its spec, `<root>/<spec>@<server>`
/// when others run the same spec. Servers that are not npx get none.
pub fn plan(root: &Path, servers: &[(String, String, Vec<String>)]) -> BTreeMap<String, PathBuf> {
    let specs: Vec<(&str, String)> = servers
        .iter()
        .filter_map(|(name, command, args)| {
            npx_package_spec(command, args).map(|spec| (name.as_str(), spec))
        })
        .collect();
    let mut sharing: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, spec) in &specs {
        *sharing.entry(spec.as_str()).or_default() += 1;
    }
    specs
        .iter()
        .map(|(name, spec)| {
            let dir = if sharing[spec.as_str()] > 1 {
                format!("{}@{}", slug(spec), slug(name))
            } else {
                slug(spec)
            };
            (name.to_string(), root.join(dir))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_the_spec_npx_runs() {
        let spec = |c: &str, a: &[&str]| npx_package_spec(c, &args(a));
        assert_eq!(
            spec("npx", &["-y", "@scope/pkg@latest", "--flag"]).as_deref(),
            Some("@scope/pkg@latest")
        );
        assert_eq!(spec("/usr/bin/npx", &["pkg"]).as_deref(), Some("pkg"));
        assert_eq!(
            spec("npx.cmd", &["--yes", "pkg@1"]).as_deref(),
            Some("pkg@1")
        );
        assert_eq!(
            spec("npx", &["-p", "pkg@2", "pkg-bin"]).as_deref(),
            Some("pkg@2")
        );
        assert_eq!(
            spec("npx", &["--package=pkg@3", "bin"]).as_deref(),
            Some("pkg@3")
        );
        assert_eq!(spec("npm", &["exec", "--", "pkg"]).as_deref(), Some("pkg"));
        assert_eq!(spec("npm", &["x", "-y", "pkg"]).as_deref(), Some("pkg"));
        assert_eq!(spec("npm", &["install", "pkg"]), None);
        assert_eq!(spec("node", &["server.js"]), None);
        assert_eq!(spec("npx", &["-y"]), None);
    }

    #[test]
    fn servers_sharing_a_spec_get_separate_caches() {
        let root = Path::new("/data/cache/npm");
        let servers = vec![
            (
                "pw-a".to_string(),
                "npx".to_string(),
                args(&["-y", "playwright-mcp@latest"]),
            ),
            (
                "pw-b".to_string(),
                "npx".to_string(),
                args(&["-y", "playwright-mcp@latest"]),
            ),
            (
                "ctx".to_string(),
                "npx".to_string(),
                args(&["-y", "@upstash/context7-mcp"]),
            ),
            (
                "local".to_string(),
                "node".to_string(),
                args(&["server.js"]),
            ),
        ];
        let plan = plan(root, &servers);
        assert_eq!(plan.len(), 3, "{plan:?}");
        let a = &plan["pw-a"];
        let b = &plan["pw-b"];
        assert_ne!(a, b, "a shared spec must not share a cache");
        assert!(a.starts_with(root) && b.starts_with(root));
        let ctx = plan["ctx"].file_name().unwrap().to_str().unwrap();
        assert!(ctx.starts_with("_upstash_context7-mcp-"), "{ctx}");
        assert!(!plan.contains_key("local"));
        // Stable: the same input plans the same directories.
        assert_eq!(super::plan(root, &servers)["pw-a"], *a);
    }

    #[test]
    fn slugs_of_different_texts_differ() {
        assert_ne!(slug("a/b"), slug("a_b"));
        assert!(!slug("..").starts_with('.'));
    }
}
