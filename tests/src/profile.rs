//! The hosted platform the suite runs as, if any (`MERIDIAN_PROFILE`).

/// A hosted platform's profile the suite runs as (`MERIDIAN_PROFILE`,
/// set by `scripts/hosted.sh`): that platform's build of the components
/// (`scripts/build-for.sh`), and no runtime configuration file, which
/// neither platform reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Fermyon Cloud: key-value `store` alone, one SQLite database.
    Cloud,
    /// Akamai Functions: key-value `store` and `batch`, no SQLite (the
    /// services on PostgreSQL).
    Akamai,
}

impl Profile {
    /// The settings its platform needs beside the build. Cloud: a
    /// tenant's count of requests in progress is exact only with atomic
    /// increments, which its key-value store lacks (a lost decrement would
    /// hold a slot until the window passes), so the concurrency limit is
    /// off. Akamai: the counts are in PostgreSQL (`counts_postgres`, set
    /// with the services' databases), where every increment is atomic and
    /// no key-value write is spent on them.
    pub(crate) fn variables(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Cloud => &[("tenant_concurrency_limit", "off")],
            Self::Akamai => &[],
        }
    }

    /// Where its build's Wasm is, under the repository's `target/`.
    pub(crate) fn build_dir(self) -> &'static str {
        match self {
            Self::Cloud => "platforms/cloud",
            Self::Akamai => "platforms/akamai",
        }
    }
}

/// The profile of this run, if any.
pub fn profile() -> Option<Profile> {
    match std::env::var("MERIDIAN_PROFILE").as_deref() {
        Ok("cloud") => Some(Profile::Cloud),
        Ok("akamai") => Some(Profile::Akamai),
        Ok("") | Err(_) => None,
        Ok(other) => panic!("MERIDIAN_PROFILE={other}: cloud or akamai"),
    }
}
