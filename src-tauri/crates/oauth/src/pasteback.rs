//! Paste-back: finishing a flow whose redirect does not reach our receiver (a pre-registered
//! redirect URI elsewhere, `manual`, or the port taken). The user pastes either the full address
//! the browser was redirected to, or the bare code; `parse` reads it as strictly as the receiver
//! reads a callback. Checking `state` and `iss` is the flow's job, exactly as for the receiver.
//!
//! Pasted text is hostile input, and may be a secret: error messages describe the problem and
//! never echo the input.

use crate::receiver::{parse_query, QueryError};

pub use crate::receiver::CallbackParams;

/// The most we read, after trimming; a redirected URL is far shorter.
pub const MAX_PASTE_LEN: usize = 8 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasteBackError {
    #[error("nothing was pasted: paste the full address the browser was redirected to, or the bare code")]
    Empty,
    #[error("the pasted text is {len} bytes, more than the 8 KiB a redirected address or code can be; paste only the address from the browser's address bar")]
    TooLong { len: usize },
    #[error("the pasted text contains a control character (such as a line break or tab); paste the address or code on its own")]
    ControlCharacter,
    #[error("the pasted address has neither a `code` nor an `error` parameter; paste the address the browser was redirected to after you approved access")]
    NoCodeOrError,
    #[error("the pasted code contains a space; paste the code on its own, or the full redirected address")]
    CodeHasWhitespace,
    #[error("the pasted text is neither a redirected address nor an authorization code (a code is printable ASCII without spaces)")]
    NotACode,
    #[error("the pasted address could not be read: {0}")]
    Malformed(#[from] QueryError),
}

/// Reads a pasted redirect: the full redirected URL (any scheme and host; `code`, `state`, `iss`,
/// `error` and `error_description` come from its query), its bare query (`code=...&state=...`),
/// or a bare code (then only `code` is set). Surrounding whitespace is ignored.
pub fn parse(input: &str) -> Result<CallbackParams, PasteBackError> {
    let text = input.trim();
    if text.is_empty() {
        return Err(PasteBackError::Empty);
    }
    if text.len() > MAX_PASTE_LEN {
        return Err(PasteBackError::TooLong { len: text.len() });
    }
    if text.chars().any(char::is_control) {
        return Err(PasteBackError::ControlCharacter);
    }

    if let Some((_, rest)) = text.split_once('?') {
        // A URL: its query ends at the fragment.
        let query = rest.split_once('#').map_or(rest, |(q, _)| q);
        return with_code_or_error(parse_query(query)?);
    }
    if text.contains("://") {
        return Err(PasteBackError::NoCodeOrError);
    }
    // A bare query, as some pages show it.
    if let Ok(params) = parse_query(text) {
        if params.code.is_some() || params.error.is_some() {
            return Ok(params);
        }
    }
    // A bare code: RFC 6749 VSCHAR, and no spaces.
    if text.chars().any(char::is_whitespace) {
        return Err(PasteBackError::CodeHasWhitespace);
    }
    if !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(PasteBackError::NotACode);
    }
    Ok(CallbackParams {
        code: Some(text.to_owned()),
        ..CallbackParams::default()
    })
}

fn with_code_or_error(params: CallbackParams) -> Result<CallbackParams, PasteBackError> {
    if params.code.is_none() && params.error.is_none() {
        Err(PasteBackError::NoCodeOrError)
    } else {
        Ok(params)
    }
}
