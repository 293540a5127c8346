//! How an OAuth client authenticates at the token endpoint (RFC 7591 §2
//! `token_endpoint_auth_method`, RFC 8414 `token_endpoint_auth_methods_supported`), as one type
//! shared by the vault (grants, registrations, pending flows) and the OAuth client.
//!
//! It lives here, not in patchbay-oauth, because the vault stores it and patchbay-oauth depends on
//! the vault; patchbay-oauth re-exports it. A name Patchbay does not perform (`private_key_jwt`,
//! `tls_client_auth`, ...) is kept as [`ClientAuthMethod::Other`] with its exact spelling, so a
//! value read from the database, a server or an imported file goes back out byte for byte.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// The client authentication method at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ClientAuthMethod {
    /// A public client: `client_id` in the form, no secret (`none`).
    #[default]
    None,
    /// The secret in an HTTP Basic header (`client_secret_basic`).
    ClientSecretBasic,
    /// The secret in the form (`client_secret_post`).
    ClientSecretPost,
    /// Any other name, exactly as given; Patchbay cannot perform it.
    Other(String),
}

impl ClientAuthMethod {
    /// The registered name (RFC 7591 / RFC 8414), or the `Other` name unchanged.
    pub fn as_str(&self) -> &str {
        match self {
            ClientAuthMethod::None => "none",
            ClientAuthMethod::ClientSecretBasic => "client_secret_basic",
            ClientAuthMethod::ClientSecretPost => "client_secret_post",
            ClientAuthMethod::Other(name) => name,
        }
    }

    /// The method of that name; never fails (unknown names become `Other`).
    pub fn from_name(name: &str) -> ClientAuthMethod {
        match name {
            "none" => ClientAuthMethod::None,
            "client_secret_basic" => ClientAuthMethod::ClientSecretBasic,
            "client_secret_post" => ClientAuthMethod::ClientSecretPost,
            other => ClientAuthMethod::Other(other.to_string()),
        }
    }

    /// `client_secret_basic` or `client_secret_post`: the two a secret is sent by.
    pub fn sends_secret(&self) -> bool {
        matches!(
            self,
            ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost
        )
    }

    /// The other of the two secret methods (for the one retry after a refused client);
    /// `None` for `none` and `Other`.
    pub fn other_secret_method(&self) -> Option<ClientAuthMethod> {
        match self {
            ClientAuthMethod::ClientSecretBasic => Some(ClientAuthMethod::ClientSecretPost),
            ClientAuthMethod::ClientSecretPost => Some(ClientAuthMethod::ClientSecretBasic),
            ClientAuthMethod::None | ClientAuthMethod::Other(_) => None,
        }
    }
}

impl fmt::Display for ClientAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClientAuthMethod {
    type Err = Infallible;
    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(ClientAuthMethod::from_name(s))
    }
}

impl From<&str> for ClientAuthMethod {
    fn from(s: &str) -> Self {
        ClientAuthMethod::from_name(s)
    }
}

impl From<String> for ClientAuthMethod {
    fn from(s: String) -> Self {
        match ClientAuthMethod::from_name(&s) {
            // Keep the allocation we were given.
            ClientAuthMethod::Other(_) => ClientAuthMethod::Other(s),
            known => known,
        }
    }
}

impl From<ClientAuthMethod> for String {
    fn from(m: ClientAuthMethod) -> Self {
        match m {
            ClientAuthMethod::Other(name) => name,
            known => known.as_str().to_string(),
        }
    }
}

impl AsRef<str> for ClientAuthMethod {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Compares by name, so `method == "none"` reads as it did when this was a string.
impl PartialEq<str> for ClientAuthMethod {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ClientAuthMethod {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ClientAuthMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ClientAuthMethod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(ClientAuthMethod::from)
    }
}

/// Stored as the name in a TEXT column, exactly as the strings were before this type.
impl ToSql for ClientAuthMethod {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(
            self.as_str().as_bytes(),
        )))
    }
}

impl FromSql for ClientAuthMethod {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value.as_str().map(ClientAuthMethod::from_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [(&str, ClientAuthMethod); 3] = [
        ("none", ClientAuthMethod::None),
        ("client_secret_basic", ClientAuthMethod::ClientSecretBasic),
        ("client_secret_post", ClientAuthMethod::ClientSecretPost),
    ];

    #[test]
    fn every_known_name_round_trips() {
        for (name, method) in KNOWN {
            assert_eq!(ClientAuthMethod::from(name), method);
            assert_eq!(ClientAuthMethod::from(name.to_string()), method);
            assert_eq!(name.parse::<ClientAuthMethod>().unwrap(), method);
            assert_eq!(method.as_str(), name);
            assert_eq!(method.to_string(), name);
            assert_eq!(String::from(method.clone()), name);
            assert_eq!(method, name);
        }
    }

    #[test]
    fn an_unknown_name_round_trips_unchanged() {
        // Case and spacing are the server's: not folded onto a known name.
        for name in [
            "private_key_jwt",
            "Client_Secret_Basic",
            " none",
            "",
            "tls_client_auth",
        ] {
            let method = ClientAuthMethod::from(name);
            assert_eq!(method, ClientAuthMethod::Other(name.to_string()));
            assert_eq!(method.as_str(), name);
            assert_eq!(method.to_string(), name);
            assert_eq!(String::from(method.clone()), name);
            assert_eq!(ClientAuthMethod::from(name.to_string()), method);
            assert_eq!(method.other_secret_method(), None);
            assert!(!method.sends_secret());
        }
    }

    #[test]
    fn the_secret_methods_swap_and_the_others_have_no_other() {
        use ClientAuthMethod::*;
        assert_eq!(
            ClientSecretBasic.other_secret_method(),
            Some(ClientSecretPost)
        );
        assert_eq!(
            ClientSecretPost.other_secret_method(),
            Some(ClientSecretBasic)
        );
        assert_eq!(None.other_secret_method(), Option::None);
        assert!(ClientSecretBasic.sends_secret() && ClientSecretPost.sends_secret());
        assert!(!None.sends_secret());
    }

    #[test]
    fn serde_reads_the_plain_name() {
        use serde::de::value::{Error, StrDeserializer};
        use serde::Deserialize;
        for name in [
            "none",
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
        ] {
            let read = ClientAuthMethod::deserialize(StrDeserializer::<Error>::new(name)).unwrap();
            assert_eq!(read, ClientAuthMethod::from(name));
            assert_eq!(read.as_str(), name);
        }
    }

    #[test]
    fn sqlite_keeps_the_exact_text() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute("CREATE TABLE t (m TEXT NOT NULL)", [])
            .unwrap();
        let names = [
            "none",
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
        ];
        for name in names {
            conn.execute(
                "INSERT INTO t (m) VALUES (?1)",
                [ClientAuthMethod::from(name)],
            )
            .unwrap();
        }
        // Written as text, byte for byte, and read back as the same method.
        let mut stmt = conn
            .prepare("SELECT m, typeof(m) FROM t ORDER BY rowid")
            .unwrap();
        let rows: Vec<(String, String, ClientAuthMethod)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(0)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for ((text, ty, method), name) in rows.into_iter().zip(names) {
            assert_eq!((text.as_str(), ty.as_str()), (name, "text"));
            assert_eq!(method, ClientAuthMethod::from(name));
        }
        // A row written as a plain string by earlier code reads back as the method.
        conn.execute("INSERT INTO t (m) VALUES ('client_secret_post')", [])
            .unwrap();
        let last: ClientAuthMethod = conn
            .query_row("SELECT m FROM t ORDER BY rowid DESC LIMIT 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(last, ClientAuthMethod::ClientSecretPost);
    }
}
