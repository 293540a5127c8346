//! Sealing and opening values under the master key: XChaCha20-Poly1305, a fresh random 24-byte
//! nonce per seal, and AAD naming the row (kind + name) so a ciphertext cannot be moved to
//! another row. Also owns the master key type and its keychain encoding (base64 of 32 bytes).

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

use crate::Secret;

const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;
/// Format byte first, so a later scheme can coexist with rows sealed under this one.
const FORMAT_V1: u8 = 1;

/// What a sealed value belongs to; part of the AAD.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Variable,
    AccessToken,
    RefreshToken,
    Canary,
    /// A dynamically registered client's secret (name: issuer + redirect URI).
    RegistrationSecret,
    /// A pending flow's PKCE verifier (name: its state).
    FlowVerifier,
    /// A pending flow's client secret (name: its state).
    FlowClientSecret,
    /// The client secret a credential is renewed with (name: its credential key).
    GrantClientSecret,
}

impl Kind {
    fn tag(self) -> &'static str {
        match self {
            Kind::Variable => "variable",
            Kind::AccessToken => "credential.access",
            Kind::RefreshToken => "credential.refresh",
            Kind::Canary => "meta.canary",
            Kind::RegistrationSecret => "registration.client_secret",
            Kind::GrantClientSecret => "grant.client_secret",
            Kind::FlowVerifier => "pending_flow.verifier",
            Kind::FlowClientSecret => "pending_flow.client_secret",
        }
    }
}

/// The 32-byte master key; zeroed on drop, never printed.
#[derive(Clone)]
pub(crate) struct MasterKey(Zeroizing<[u8; KEY_LEN]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OpenFailed;

impl MasterKey {
    pub(crate) fn generate() -> Self {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        // As for nonces: an OS RNG failure is not recoverable here and does not happen on our targets.
        getrandom::getrandom(key.as_mut()).expect("OS random number generator failed");
        MasterKey(key)
    }

    /// `None` when the keychain item is not base64 of exactly 32 bytes.
    pub(crate) fn decode(encoded: &Secret) -> Option<Self> {
        let bytes = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(encoded.expose().trim())
                .ok()?,
        );
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        if bytes.len() != KEY_LEN {
            return None;
        }
        key.copy_from_slice(&bytes);
        Some(MasterKey(key))
    }

    pub(crate) fn encode(&self) -> Secret {
        Secret::new(base64::engine::general_purpose::STANDARD.encode(self.0.as_ref()))
    }

    /// `FORMAT_V1 || nonce(24) || ciphertext+tag`.
    pub(crate) fn seal(&self, kind: Kind, name: &str, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        // The OS RNG failing is not something a caller can handle; it never happens in practice.
        getrandom::getrandom(&mut nonce).expect("OS random number generator failed");
        let aad = aad(kind, name);
        let ct = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory buffers");
        let mut out = Vec::with_capacity(1 + NONCE_LEN + ct.len());
        out.push(FORMAT_V1);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        out
    }

    pub(crate) fn seal_secret(&self, kind: Kind, name: &str, value: &Secret) -> Vec<u8> {
        self.seal(kind, name, value.expose().as_bytes())
    }

    pub(crate) fn open(
        &self,
        kind: Kind,
        name: &str,
        sealed: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, OpenFailed> {
        if sealed.len() < 1 + NONCE_LEN || sealed[0] != FORMAT_V1 {
            return Err(OpenFailed);
        }
        let (nonce, ct) = sealed[1..].split_at(NONCE_LEN);
        let aad = aad(kind, name);
        self.cipher()
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: &aad })
            .map(Zeroizing::new)
            .map_err(|_| OpenFailed)
    }

    pub(crate) fn open_secret(
        &self,
        kind: Kind,
        name: &str,
        sealed: &[u8],
    ) -> Result<Secret, OpenFailed> {
        let bytes = self.open(kind, name, sealed)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| OpenFailed)?;
        Ok(Secret::new(text))
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(chacha20poly1305::Key::from_slice(self.0.as_ref()))
    }
}

/// NUL-separated so ("ab","c") and ("a","bc") cannot collide; names never contain NUL.
fn aad(kind: Kind, name: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(16 + kind.tag().len() + name.len());
    aad.extend_from_slice(b"patchbay-vault/1\0");
    aad.extend_from_slice(kind.tag().as_bytes());
    aad.push(0);
    aad.extend_from_slice(name.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_roundtrip_and_fresh_nonce() {
        let key = MasterKey::generate();
        let a = key.seal(Kind::Variable, "X", b"hello");
        let b = key.seal(Kind::Variable, "X", b"hello");
        assert_ne!(a, b, "each seal draws a new nonce");
        assert_eq!(&key.open(Kind::Variable, "X", &a).unwrap()[..], b"hello");
    }

    #[test]
    fn ciphertext_is_bound_to_its_row() {
        let key = MasterKey::generate();
        let sealed = key.seal(Kind::AccessToken, "notion|abc", b"tok");
        assert_eq!(
            key.open(Kind::AccessToken, "github|abc", &sealed),
            Err(OpenFailed)
        );
        assert_eq!(
            key.open(Kind::RefreshToken, "notion|abc", &sealed),
            Err(OpenFailed)
        );
    }

    #[test]
    fn other_key_cannot_open() {
        let sealed = MasterKey::generate().seal(Kind::Canary, "", b"x");
        let other = MasterKey::generate();
        assert_eq!(other.open(Kind::Canary, "", &sealed), Err(OpenFailed));
    }

    #[test]
    fn key_encoding_roundtrip_and_rejects_malformed() {
        let key = MasterKey::generate();
        let back = MasterKey::decode(&key.encode()).unwrap();
        let sealed = key.seal(Kind::Variable, "A", b"v");
        assert!(back.open(Kind::Variable, "A", &sealed).is_ok());
        assert!(MasterKey::decode(&Secret::new("not base64!")).is_none());
        assert!(MasterKey::decode(&Secret::new("AAAA")).is_none());
        assert_eq!(format!("{key:?}"), "MasterKey([redacted])");
    }
}
