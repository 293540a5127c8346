//! `patchbay://` links, parsed as the hostile input they are: anything on the machine (a web page,
//! a chat message, another program) can hand one to the app. The only link is
//! `patchbay://authorize/NAME`, which starts the same authorization as the window's button for
//! the catalog connector NAME. The server URL never comes from a link: the Authorizer looks NAME
//! up in the catalog and refuses anything else.
//!
//! The grammar is deliberately narrower than RFC 3986: the scheme `patchbay` (any case, as
//! schemes are), the host `authorize` exactly, one non-empty path segment, no userinfo, port,
//! query or fragment, printable ASCII only, at most [`MAX_LINK_BYTES`] bytes. The segment is
//! percent-decoded once and must then be a catalog server name (the schema's
//! `^[$a-zA-Z0-9_\[\]-]+$`) of at most [`MAX_NAME_CHARS`] characters, so `.`, `..`, `/` and NUL
//! cannot appear however they are encoded.

/// The link scheme, registered with the OS by the tray app.
pub const SCHEME: &str = "patchbay";
/// The one action a link can ask for.
pub const AUTHORIZE: &str = "authorize";
/// The longest link accepted, in bytes.
pub const MAX_LINK_BYTES: usize = 512;
/// The longest connector name a link may carry.
pub const MAX_NAME_CHARS: usize = 128;

/// What a valid link asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeepLink {
    /// Authorize the catalog connector `connector` (not yet checked against the catalog).
    Authorize { connector: String },
}

/// Why a link was refused. The messages never repeat the link's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeepLinkError {
    #[error("the link is longer than {MAX_LINK_BYTES} bytes")]
    TooLong,
    #[error("the link contains spaces, control or non-ASCII characters")]
    BadCharacter,
    #[error("not a patchbay:// link")]
    NotPatchbay,
    #[error("the link carries a user name, password or port")]
    Authority,
    #[error("Patchbay links only authorize connectors (patchbay://authorize/NAME)")]
    UnknownAction,
    #[error("the link carries a query or fragment")]
    QueryOrFragment,
    #[error("the link must name exactly one connector: patchbay://authorize/NAME")]
    Path,
    #[error("the link's connector name is not a catalog name (letters, digits, -, _, [, ], $; at most {MAX_NAME_CHARS})")]
    BadName,
}

/// Parses a `patchbay://` link.
pub fn parse(link: &str) -> Result<DeepLink, DeepLinkError> {
    if link.len() > MAX_LINK_BYTES {
        return Err(DeepLinkError::TooLong);
    }
    if !link.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(DeepLinkError::BadCharacter);
    }
    let prefix = format!("{SCHEME}://");
    let rest = match link.get(..prefix.len()) {
        Some(head) if head.eq_ignore_ascii_case(&prefix) => &link[prefix.len()..],
        _ => return Err(DeepLinkError::NotPatchbay),
    };
    if rest.contains(['?', '#']) {
        return Err(DeepLinkError::QueryOrFragment);
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains(['@', ':']) {
        return Err(DeepLinkError::Authority);
    }
    if authority != AUTHORIZE {
        return Err(DeepLinkError::UnknownAction);
    }
    let segment = path.strip_prefix('/').ok_or(DeepLinkError::Path)?;
    if segment.is_empty() || segment.contains('/') {
        return Err(DeepLinkError::Path);
    }
    let connector = decode_name(segment)?;
    Ok(DeepLink::Authorize { connector })
}

/// The link among a process's arguments (the first is the program and is skipped): Linux and
/// Windows start the handler with the link as an argument, and a second launch forwards its
/// arguments to the running app. `None` when no argument is a `patchbay:` link.
pub fn from_args<I, S>(args: I) -> Option<Result<DeepLink, DeepLinkError>>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let scheme = format!("{SCHEME}:");
    args.into_iter()
        .skip(1)
        .find(|a| {
            a.as_ref()
                .get(..scheme.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(&scheme))
        })
        .map(|a| parse(a.as_ref()))
}

/// A catalog server name's characters (catalog/mcp.schema.json, `propertyNames.pattern`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'[' | b']' | b'$')
}

fn decode_name(segment: &str) -> Result<String, DeepLinkError> {
    let bytes = segment.as_bytes();
    let mut name = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or(DeepLinkError::BadName)?;
                let hex = std::str::from_utf8(hex).map_err(|_| DeepLinkError::BadName)?;
                i += 3;
                u8::from_str_radix(hex, 16).map_err(|_| DeepLinkError::BadName)?
            }
            b => {
                i += 1;
                b
            }
        };
        if !is_name_byte(b) {
            return Err(DeepLinkError::BadName);
        }
        name.push(b as char);
    }
    if name.is_empty() || name.len() > MAX_NAME_CHARS {
        return Err(DeepLinkError::BadName);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(link: &str) -> String {
        match parse(link) {
            Ok(DeepLink::Authorize { connector }) => connector,
            Err(e) => panic!("{link:?} refused: {e}"),
        }
    }

    fn err(link: &str) -> DeepLinkError {
        parse(link).expect_err(link)
    }

    #[test]
    fn accepts_catalog_names() {
        assert_eq!(ok("patchbay://authorize/notion"), "notion");
        assert_eq!(ok("patchbay://authorize/my-server_2"), "my-server_2");
        assert_eq!(ok("patchbay://authorize/a[1]$"), "a[1]$");
        assert_eq!(ok("patchbay://authorize/%5Bx%5d"), "[x]");
        assert_eq!(ok("patchbay://authorize/%6Eotion"), "notion");
        let longest = "n".repeat(MAX_NAME_CHARS);
        assert_eq!(ok(&format!("patchbay://authorize/{longest}")), longest);
    }

    #[test]
    fn the_scheme_is_case_insensitive_as_rfc_3986_says_and_nothing_else_is() {
        assert_eq!(ok("PATCHBAY://authorize/notion"), "notion");
        assert_eq!(ok("PatchBay://authorize/notion"), "notion");
        assert_eq!(
            err("patchbay://AUTHORIZE/notion"),
            DeepLinkError::UnknownAction
        );
    }

    #[test]
    fn refuses_path_tricks() {
        for link in [
            "patchbay://authorize/../x",
            "patchbay://authorize/x/..",
            "patchbay://authorize/a/b",
            "patchbay://authorize/notion/",
            "patchbay://authorize//notion",
            "patchbay://authorize/",
            "patchbay://authorize",
        ] {
            assert_eq!(err(link), DeepLinkError::Path, "{link}");
        }
        for link in [
            "patchbay://authorize/..",
            "patchbay://authorize/.",
            "patchbay://authorize/%2e%2e",
            "patchbay://authorize/a%2Fb",
            "patchbay://authorize/a%5Cb",
            "patchbay://authorize/a%00",
            "patchbay://authorize/%00",
            "patchbay://authorize/a%0a",
            "patchbay://authorize/%",
            "patchbay://authorize/%4",
            "patchbay://authorize/%zz",
            "patchbay://authorize/%C3%A9",
            "patchbay://authorize/%2525",
            "patchbay://authorize/a.b",
            "patchbay://authorize/a~b",
            "patchbay://authorize/a+b",
        ] {
            assert_eq!(err(link), DeepLinkError::BadName, "{link}");
        }
    }

    #[test]
    fn refuses_other_schemes_hosts_and_shapes() {
        assert_eq!(err("patchbay:authorize/x"), DeepLinkError::NotPatchbay);
        assert_eq!(err("patchbay:/authorize/x"), DeepLinkError::NotPatchbay);
        assert_eq!(err("https://authorize/x"), DeepLinkError::NotPatchbay);
        assert_eq!(err("patchbayx://authorize/x"), DeepLinkError::NotPatchbay);
        assert_eq!(err(""), DeepLinkError::NotPatchbay);
        assert_eq!(err("patchbay://"), DeepLinkError::UnknownAction);
        assert_eq!(err("patchbay://settings/x"), DeepLinkError::UnknownAction);
        assert_eq!(
            err("patchbay://authorize.evil/x"),
            DeepLinkError::UnknownAction
        );
        assert_eq!(err("patchbay:///authorize/x"), DeepLinkError::UnknownAction);
        assert_eq!(err("patchbay://me@authorize/x"), DeepLinkError::Authority);
        assert_eq!(err("patchbay://authorize:80/x"), DeepLinkError::Authority);
        assert_eq!(
            err("patchbay://authorize/x?url=https://evil"),
            DeepLinkError::QueryOrFragment
        );
        assert_eq!(
            err("patchbay://authorize/x?"),
            DeepLinkError::QueryOrFragment
        );
        assert_eq!(
            err("patchbay://authorize/x#y"),
            DeepLinkError::QueryOrFragment
        );
    }

    #[test]
    fn refuses_odd_characters_and_long_links() {
        assert_eq!(err("patchbay://authorize/a b"), DeepLinkError::BadCharacter);
        assert_eq!(err("patchbay://authorize/a\0"), DeepLinkError::BadCharacter);
        assert_eq!(err("patchbay://authorize/a\n"), DeepLinkError::BadCharacter);
        assert_eq!(err(" patchbay://authorize/a"), DeepLinkError::BadCharacter);
        assert_eq!(err("patchbay://authorize/é"), DeepLinkError::BadCharacter);
        let long = format!("patchbay://authorize/{}", "n".repeat(MAX_NAME_CHARS + 1));
        assert_eq!(err(&long), DeepLinkError::BadName);
        let huge = format!("patchbay://authorize/{}", "n".repeat(MAX_LINK_BYTES));
        assert_eq!(err(&huge), DeepLinkError::TooLong);
        let encoded = format!("patchbay://authorize/{}", "%6E".repeat(MAX_NAME_CHARS + 1));
        assert!(encoded.len() <= MAX_LINK_BYTES);
        assert_eq!(err(&encoded), DeepLinkError::BadName);
        assert_eq!(err(&"x".repeat(100_000)), DeepLinkError::TooLong);
    }

    #[test]
    fn errors_do_not_echo_the_link() {
        let e = err("patchbay://authorize/<script>alert(1)</script>");
        assert!(!e.to_string().contains("script"));
    }

    #[test]
    fn the_name_charset_is_the_catalog_schemas() {
        // If the schema's name pattern changes, is_name_byte must change with it.
        assert!(patchbay_catalog::SCHEMA.contains(r#""pattern": "^[$a-zA-Z0-9_\\[\\]-]+$""#));
        let allowed: String = (0u8..=127)
            .filter(|b| is_name_byte(*b))
            .map(char::from)
            .collect();
        assert_eq!(
            allowed,
            "$-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz"
        );
    }

    #[test]
    fn finds_the_link_among_arguments() {
        assert_eq!(from_args(["patchbay-app"]), None);
        assert_eq!(from_args(["patchbay-app", "--show"]), None);
        // argv[0] is never taken for a link
        assert_eq!(from_args(["patchbay://authorize/x"]), None);
        assert_eq!(
            from_args(["/usr/bin/patchbay-app", "patchbay://authorize/notion"]),
            Some(Ok(DeepLink::Authorize {
                connector: "notion".into()
            }))
        );
        assert_eq!(
            from_args(["app", "--show", "PATCHBAY:authorize/x"]),
            Some(Err(DeepLinkError::NotPatchbay))
        );
    }
}
