//! Opening consent in the system browser (RFC 8252: never an embedded webview), through the
//! platform's opener: on Linux `$BROWSER` first, then `xdg-open` and the desktop's tools; `open`
//! on macOS; the default handler on Windows. Only http and https addresses are opened.

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("refusing to open a browser on an address that is not an http or https URL")]
    NotHttp,
    #[error("could not open the system browser ({0}); open the address yourself, or use --no-browser to print it")]
    Open(#[source] std::io::Error),
}

/// Opens `url` in the system browser. Returns once the opener has been started (on Linux the
/// browser runs in the background); it does not wait for the page.
pub fn open(url: &str) -> Result<(), BrowserError> {
    let parsed = url::Url::parse(url).map_err(|_| BrowserError::NotHttp)?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(BrowserError::NotHttp);
    }
    tracing::debug!(
        host = parsed.host_str().unwrap_or(""),
        "opening the system browser"
    );
    webbrowser::open(parsed.as_str()).map_err(BrowserError::Open)
}
