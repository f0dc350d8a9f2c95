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
    /// Its name in the scripts (`scripts/build-for.sh`, `hosted.sh`) and
    /// under `deploy/`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cloud => "cloud",
            Self::Akamai => "akamai",
        }
    }

    /// The platform, as its users know it.
    pub fn platform(self) -> &'static str {
        match self {
            Self::Cloud => "Fermyon Cloud",
            Self::Akamai => "Akamai Functions",
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
