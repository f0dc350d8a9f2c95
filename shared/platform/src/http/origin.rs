//! The app's own public origin (`public_origin`), through which its
//! components call each other where the platform has no service chaining
//! (Fermyon Cloud): each service answers under `/_meridian/<service>`
//! there ([`crate::wire::INTERNAL_PREFIX`]), and every call is signed
//! ([`crate::wire::signature`]).

use crate::wire::INTERNAL_PREFIX;

/// A usable public origin: `https://host[:port]`, or plain `http://` on a
/// loopback address only (the local suite, which never leaves the
/// machine). Calls through it cross the internet, so nothing else may
/// carry them in clear text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin(String);

/// Why a `public_origin` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// Left at the manifest's placeholder (`*.invalid`), or empty.
    #[error(
        "is not set: set it to the app's own URL (https://<app>.fermyon.app or its custom domain)"
    )]
    NotSet,
    /// Not a bare `scheme://host[:port]`.
    #[error("{0:?} is not an origin: give scheme, host and port only (https://<app>.fermyon.app)")]
    NotAnOrigin(String),
    /// Plain HTTP to a host that is not loopback.
    #[error("{0:?} is not https: internal calls cross the internet (plain http only on 127.0.0.1, [::1] or localhost)")]
    NotHttps(String),
}

impl PublicOrigin {
    /// The origin in `raw`, or why it cannot serve.
    pub fn parse(raw: &str) -> Result<Self, OriginError> {
        let raw = raw.trim().trim_end_matches('/');
        if raw.is_empty() {
            return Err(OriginError::NotSet);
        }
        let not_origin = || OriginError::NotAnOrigin(raw.to_owned());
        let uri: http::Uri = raw.parse().map_err(|_| not_origin())?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(not_origin());
        };
        let bare = uri.path_and_query().is_none_or(|pq| pq.as_str() == "/");
        if !bare || authority.as_str().contains('@') {
            return Err(not_origin());
        }
        let host = authority.host();
        if host.ends_with(".invalid") {
            return Err(OriginError::NotSet);
        }
        match scheme {
            "https" => {}
            "http" if matches!(host, "127.0.0.1" | "[::1]" | "localhost") => {}
            "http" => return Err(OriginError::NotHttps(raw.to_owned())),
            _ => return Err(not_origin()),
        }
        Ok(Self(format!("{scheme}://{authority}")))
    }

    /// The base URL of `service` behind this origin, without a trailing
    /// slash: `https://app.example/_meridian/identity`.
    pub fn service_url(&self, service: &str) -> String {
        format!("{}{INTERNAL_PREFIX}/{service}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_origin_names_each_service_under_the_internal_prefix() {
        let origin = PublicOrigin::parse("https://meridian-x1y2.fermyon.app/").unwrap();
        assert_eq!(
            origin.service_url("identity"),
            "https://meridian-x1y2.fermyon.app/_meridian/identity"
        );
        let port = PublicOrigin::parse("https://api.example.com:8443").unwrap();
        assert_eq!(
            port.service_url("billing"),
            "https://api.example.com:8443/_meridian/billing"
        );
    }

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        for loopback in [
            "http://127.0.0.1:3000",
            "http://localhost:3000",
            "http://[::1]:3000",
        ] {
            assert!(PublicOrigin::parse(loopback).is_ok(), "{loopback}");
        }
        for remote in [
            "http://meridian.fermyon.app",
            "http://10.0.0.1:80",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(
                matches!(PublicOrigin::parse(remote), Err(OriginError::NotHttps(_))),
                "{remote}"
            );
        }
    }

    #[test]
    fn the_placeholder_an_empty_value_or_anything_but_an_origin_is_refused() {
        assert_eq!(
            PublicOrigin::parse("https://public-origin.invalid"),
            Err(OriginError::NotSet)
        );
        assert_eq!(PublicOrigin::parse("  "), Err(OriginError::NotSet));
        for bad in [
            "meridian.fermyon.app",
            "https://meridian.fermyon.app/api",
            "https://meridian.fermyon.app/?x=1",
            "https://user@meridian.fermyon.app",
            "ftp://meridian.fermyon.app",
            "https://",
        ] {
            assert!(
                matches!(PublicOrigin::parse(bad), Err(OriginError::NotAnOrigin(_))),
                "{bad}"
            );
        }
    }
}
