//! The system browser. This binary is the only one that touches `$BROWSER`, and only one test in
//! it does, so the variable's changes cannot leak into other tests.

use patchbay_oauth::browser::{self, BrowserError};

#[test]
fn refuses_anything_but_http() {
    for url in [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "patchbay://authorize/linear",
        "ftp://example.com/",
        "not a url",
        "",
        "http://",
    ] {
        assert!(
            matches!(browser::open(url), Err(BrowserError::NotHttp)),
            "{url}"
        );
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
#[test]
fn opens_through_dollar_browser() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("opened.txt");
    let script = dir.path().join("fake-browser");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let url = "https://auth.example.com/authorize?response_type=code&client_id=abc&state=s%2B1&code_challenge_method=S256";
    let prev = std::env::var_os("BROWSER");
    std::env::set_var("BROWSER", &script);
    let result = browser::open(url);
    match prev {
        Some(p) => std::env::set_var("BROWSER", p),
        None => std::env::remove_var("BROWSER"),
    }
    result.unwrap();

    // The opener runs the browser in the background.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !out.exists() {
        assert!(Instant::now() < deadline, "the fake browser never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), url);
}
