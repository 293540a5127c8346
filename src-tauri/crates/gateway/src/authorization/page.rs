//! The consent page and the authorization server's error pages: plain HTML, every value
//! escaped, behind a CSP that allows only its own inline style and, on the consent page, its one
//! script (both by nonce: it asks `/oauth/authorize/answer` whether the window answered, and
//! follows the answer), a form posted to itself and the client's redirect, and no framing.

use super::Pending;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.35rem;margin:.2rem 0 1rem}.brand{color:#6b6b73;font-weight:600;letter-spacing:.02em}
.box{border:1px solid #d8d8de;border-radius:10px;padding:1rem 1.1rem;margin:1rem 0}
.muted{color:#6b6b73;font-size:.9rem}label{display:block;margin:.35rem 0}ul{margin:.3rem 0 0 1.6rem;padding:0}
.actions{display:flex;gap:.6rem;justify-content:flex-end;margin-top:1.2rem}
button{font:inherit;padding:.5rem 1.1rem;border-radius:8px;border:1px solid #c4c4cc;background:#fff;cursor:pointer}
button.allow{background:#2457d6;border-color:#2457d6;color:#fff}
@media (prefers-color-scheme:dark){body{background:#1c1c1e;color:#f2f2f7}.box{border-color:#3a3a3f}button{background:#2c2c2e;color:#f2f2f7;border-color:#48484e}}";

use patchbay_oauth::receiver::escape_html as escape;

/// Where a redirect URI sends the browser, as a person reads it (`localhost:33418`, `cursor:`).
fn destination(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url
            .host_str()
            .map(|h| match url.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_owned(),
            })
            .unwrap_or_default(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => uri.to_owned(),
    }
}

/// The CSP source the form's redirect lands on (CSP 3 applies form-action to redirects).
fn redirect_source(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.origin().ascii_serialization(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => "'none'".into(),
    }
}

/// The consent page's script: every second, ask whether the request was answered in the
/// window; follow the answer, stop once the request is gone (answered here, or expired).
const FOLLOW_THE_WINDOW: &str = "(()=>{const f=document.querySelector('form input[name=request]');if(!f)return;\
const ask=async()=>{try{const r=await fetch('/oauth/authorize/answer?request='+encodeURIComponent(f.value),{cache:'no-store'});\
if(r.status===200){const a=await r.json();location.replace(a.redirect);return}if(r.status===404)return}catch(e){}setTimeout(ask,1000)};\
setTimeout(ask,1000)})();";

fn html(status: StatusCode, form_action: &str, title: &str, body: &str) -> Response {
    html_with(status, form_action, title, body, None)
}

fn html_with(
    status: StatusCode,
    form_action: &str,
    title: &str,
    body: &str,
    script: Option<&str>,
) -> Response {
    let mut nonce = [0u8; 16];
    let _ = getrandom::getrandom(&mut nonce);
    let nonce = crate::clients::hex(&nonce);
    let (script_src, script_tag) = match script {
        Some(code) => (
            format!("; script-src 'nonce-{nonce}'; connect-src 'self'"),
            format!("<script nonce=\"{nonce}\">{code}</script>"),
        ),
        None => (String::new(), String::new()),
    };
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'{script_src}; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
    );
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{title} · Patchbay</title><style nonce=\"{nonce}\">{STYLE}</style></head><body><div class=\"brand\">Patchbay</div>{body}{script_tag}</body></html>"
    );
    let mut answer = (status, page).into_response();
    let h = answer.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = header::HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_FRAME_OPTIONS,
        header::HeaderValue::from_static("DENY"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    // Not `no-referrer`: under it a browser sends `Origin: null` with the page's own POST, which
    // the Origin gate must refuse. `same-origin` still tells the client's redirect nothing.
    h.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("same-origin"),
    );
    answer
}

/// A request that cannot go on, said in the browser (never redirected: its target is unknown).
pub(super) fn problem(message: &str) -> Response {
    refused(StatusCode::BAD_REQUEST, message)
}

pub(super) fn refused(status: StatusCode, message: &str) -> Response {
    html(
        status,
        "'none'",
        "Cannot authorize",
        &format!(
            "<h1>This request cannot go on</h1><p>{}</p><p class=\"muted\">Nothing was granted. You can close this tab.</p>",
            escape(message)
        ),
    )
}

/// The consent page for `pending`, answered with `request_id`; `in_use` the connectors in use
/// (name, title).
pub(super) fn consent(
    request_id: &str,
    pending: &Pending,
    in_use: &[(String, String)],
) -> Response {
    let client = escape(&pending.client.client_name);
    let title_of = |name: &str| {
        in_use
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| name.to_owned())
    };
    let what = match &pending.connector {
        Some(one) => format!(
            "<p><strong>{client}</strong> wants to use <strong>{}</strong> through Patchbay.</p>",
            escape(&title_of(one))
        ),
        None => {
            let mut list = String::new();
            for (name, title) in in_use {
                list.push_str(&format!(
                    "<label><input type=\"checkbox\" name=\"connector\" value=\"{}\" checked> {}</label>",
                    escape(name),
                    escape(title)
                ));
            }
            if in_use.is_empty() {
                list.push_str("<p class=\"muted\">No connector is in use yet.</p>");
            }
            format!(
                "<p><strong>{client}</strong> wants to use your connectors through Patchbay.</p>\
                 <div class=\"box\"><label><input type=\"radio\" name=\"access\" value=\"all\" checked> Every connector in use, and ones you add later</label>\
                 <label><input type=\"radio\" name=\"access\" value=\"some\"> Only these:</label><ul>{list}</ul></div>"
            )
        }
    };
    let body = format!(
        "<h1>Allow {client}?</h1><form method=\"post\" action=\"/oauth/authorize\">\
         <input type=\"hidden\" name=\"request\" value=\"{id}\">{what}\
         <p class=\"muted\">It reaches them through Patchbay's gateway on this computer and never sees their tokens. \
         You can revoke it any time in the Connectors window or with <code>patchbay gateway client revoke</code>.</p>\
         <p class=\"muted\">After you answer, here or in Patchbay's Connectors window, the browser returns to {dest}.</p>\
         <div class=\"actions\"><button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\
         <button class=\"allow\" type=\"submit\" name=\"decision\" value=\"allow\">Allow</button></div></form>",
        id = escape(request_id),
        dest = escape(&destination(&pending.redirect_uri)),
    );
    html_with(
        StatusCode::OK,
        &format!("'self' {}", redirect_source(&pending.redirect_uri)),
        &format!("Allow {client}?"),
        &body,
        Some(FOLLOW_THE_WINDOW),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_and_destinations_read_as_hosts() {
        assert_eq!(
            escape("<b a=\"x\">&'"),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            destination("http://localhost:33418/cb?x=1"),
            "localhost:33418"
        );
        assert_eq!(destination("cursor://anysphere/oauth"), "cursor:");
        assert_eq!(
            redirect_source("http://127.0.0.1:9/cb"),
            "http://127.0.0.1:9"
        );
    }
}
