//! Paste-back parsing: what a user may paste, and what is refused.

use patchbay_oauth::pasteback::{parse, CallbackParams, PasteBackError};

const SECRET: &str = "SplxlOBeZQQYbYS6WxSbIA";

#[test]
fn full_url_with_code_state_and_iss() {
    let p = parse(&format!(
        "http://127.0.0.1:3118/callback?code={SECRET}&state=xyz%2D1&iss=https%3A%2F%2Fauth.example.com"
    ))
    .unwrap();
    assert_eq!(
        p,
        CallbackParams {
            code: Some(SECRET.into()),
            state: Some("xyz-1".into()),
            iss: Some("https://auth.example.com".into()),
            ..Default::default()
        }
    );
    // Any scheme and host, a fragment, other parameters.
    let p =
        parse("https://app.example.com/oauth/done?session_state=q&code=c1&state=s#frag").unwrap();
    assert_eq!(p.code.as_deref(), Some("c1"));
    assert_eq!(p.state.as_deref(), Some("s"));
    let p = parse("com.example.app:/cb?code=c2&state=s").unwrap();
    assert_eq!(p.code.as_deref(), Some("c2"));
    let p = parse("localhost:3118/callback?code=c3").unwrap();
    assert_eq!(p.code.as_deref(), Some("c3"));
}

#[test]
fn url_with_a_provider_error() {
    let p = parse("http://localhost:3118/callback?error=access_denied&error_description=The+user+denied&state=abc").unwrap();
    assert_eq!(p.error.as_deref(), Some("access_denied"));
    assert_eq!(p.error_description.as_deref(), Some("The user denied"));
    assert_eq!(p.state.as_deref(), Some("abc"));
    assert_eq!(p.code, None);
}

#[test]
fn bare_code_and_bare_query() {
    assert_eq!(
        parse(SECRET).unwrap(),
        CallbackParams {
            code: Some(SECRET.into()),
            ..Default::default()
        }
    );
    // Codes may carry base64 padding and other visible ASCII.
    assert_eq!(parse("ab/c+d==").unwrap().code.as_deref(), Some("ab/c+d=="));
    let p = parse("code=c9&state=s9").unwrap();
    assert_eq!(p.code.as_deref(), Some("c9"));
    assert_eq!(p.state.as_deref(), Some("s9"));
}

#[test]
fn whitespace_around_is_trimmed() {
    assert_eq!(
        parse(&format!("  \n{SECRET}\t \r\n"))
            .unwrap()
            .code
            .as_deref(),
        Some(SECRET)
    );
    let p = parse("\n  http://127.0.0.1:3118/callback?code=c&state=s  \n").unwrap();
    assert_eq!(p.code.as_deref(), Some("c"));
}

#[test]
fn refusals() {
    assert_eq!(parse(""), Err(PasteBackError::Empty));
    assert_eq!(parse(" \n\t "), Err(PasteBackError::Empty));
    let long = "a".repeat(8 * 1024 + 1);
    assert_eq!(parse(&long), Err(PasteBackError::TooLong { len: 8193 }));
    assert!(parse(&"a".repeat(8 * 1024)).is_ok());
    assert_eq!(parse("abc\u{0}def"), Err(PasteBackError::ControlCharacter));
    assert_eq!(parse("abc\ndef"), Err(PasteBackError::ControlCharacter));
    assert_eq!(parse("abc def"), Err(PasteBackError::CodeHasWhitespace));
    assert_eq!(
        parse("http://127.0.0.1:3118/callback?state=s"),
        Err(PasteBackError::NoCodeOrError)
    );
    assert_eq!(
        parse("http://127.0.0.1:3118/callback"),
        Err(PasteBackError::NoCodeOrError)
    );
    assert_eq!(
        parse("http://x/cb?code=a&code=b"),
        Err(PasteBackError::Malformed(
            patchbay_oauth::receiver::QueryError::Repeated("code")
        ))
    );
    assert!(matches!(
        parse("http://x/cb?code=%zz"),
        Err(PasteBackError::Malformed(_))
    ));
    // Garbage.
    assert_eq!(parse("héllo✓"), Err(PasteBackError::NotACode));
    assert_eq!(
        parse("I clicked approve but nothing happened"),
        Err(PasteBackError::CodeHasWhitespace)
    );
}

#[test]
fn errors_never_echo_the_input() {
    let cases = [
        format!("{SECRET} {SECRET}"),
        format!("{SECRET}\u{7}"),
        format!("http://x/cb?state={SECRET}"),
        format!("http://x/cb?code={SECRET}&code={SECRET}"),
        format!("http://x/cb?code=%zz{SECRET}"),
        format!("{SECRET}é"),
        SECRET.repeat(400),
    ];
    for input in cases {
        let msg = parse(&input).unwrap_err().to_string();
        assert!(!msg.contains(SECRET), "{msg}");
        assert!(!msg.contains(&SECRET[..8]), "{msg}");
    }
}
