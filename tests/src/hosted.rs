//! The manifests the hosted platforms deploy: `deploy/cloud/spin.toml` and
//! `deploy/akamai/spin.toml`, generated from `spin.toml` so that routes,
//! variables and components have one source of truth, and the same
//! transformation the end-to-end suite runs a hosted profile with.
//!
//! What each platform's manifest changes (docs/deploy.md, "Where it runs"):
//!
//! - the components' Wasm is that platform's build
//!   (`scripts/build-for.sh cloud|akamai` leaves it in
//!   `target/platforms/<name>/`), and no component has a build step of its
//!   own: the platform's build is one command for the four;
//! - Fermyon Cloud grants an app one SQLite database, so every service
//!   opens the label `default` (its tables and migration ledger its own by
//!   name) and `sqlite_database` says so; its key-value store has no
//!   atomic increments, so a tenant's count of requests in progress — which
//!   a lost decrement would hold shut — is off;
//! - Akamai Functions has no SQLite, so no label is granted and the
//!   PostgreSQL variables (the services' databases and the counts'
//!   `counts_postgres`, off the key-value store's write quota) must be set:
//!   a deploy without them is refused by Spin, not answered with 503s.
//!
//! Neither platform reads a runtime configuration file, so the manifests
//! name only the `default` key-value store; `platforms` checks each
//! against what its platform offers, and a test fails when a committed
//! manifest differs from what `spin.toml` generates.

use std::path::PathBuf;

pub use crate::profile::Profile;
use crate::split::SERVICES;

/// The one SQLite label a platform that allows one database gives an app
/// (Fermyon Cloud's), and the one every service opens with
/// `MERIDIAN_DB=one`.
pub const ONE_DATABASE: &str = "default";

/// The hosted platforms with a manifest of their own.
pub const PROFILES: [Profile; 2] = [Profile::Cloud, Profile::Akamai];

/// Where `profile`'s manifest lives.
pub fn manifest_path(profile: Profile) -> PathBuf {
    crate::repo_root()
        .join("deploy")
        .join(profile.name())
        .join("spin.toml")
}

/// `profile`'s committed manifest, from the text of `spin.toml`.
pub fn manifest(spin_toml: &str, profile: Profile) -> String {
    let body = deployed(
        spin_toml,
        profile,
        "target/wasm32-wasip2/release",
        &format!("../../target/{}", profile.build_dir()),
    );
    format!(
        "# Generated from spin.toml for {}: `cargo run -p meridian-tools --bin\n\
         # hosted -- generate`. Do not edit. Build first: `scripts/build-for.sh {}`.\n{body}",
        profile.platform(),
        profile.name()
    )
}

/// A manifest's `text` as `profile`'s platform deploys it, with the
/// components' Wasm moved from `built` (the default build's directory, as
/// `text` names it) to `platform_dir`. Applying it twice changes nothing.
pub fn deployed(text: &str, profile: Profile, built: &str, platform_dir: &str) -> String {
    let mut out = String::new();
    let mut in_build = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_build = line.starts_with("[component.") && line.ends_with(".build]");
        }
        // A dropped build table leaves the blank line before it and the
        // one after it: one is kept.
        if in_build || (line.is_empty() && out.ends_with("\n\n")) {
            continue;
        }
        let line = match line.strip_prefix("sqlite_databases = ") {
            Some(_) => match profile {
                Profile::Cloud => format!("sqlite_databases = [\"{ONE_DATABASE}\"]"),
                Profile::Akamai => continue,
            },
            None => with_default(line, profile).unwrap_or_else(|| line.to_owned()),
        };
        let line = SERVICES.iter().fold(line, |line, component| {
            line.replace(
                &format!("\"{built}/{component}.wasm\""),
                &format!("\"{platform_dir}/{component}.wasm\""),
            )
        });
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A declaration of an application variable as `profile` deploys it,
/// with why it differs from `spin.toml`'s.
fn with_default(line: &str, profile: Profile) -> Option<String> {
    let (name, _) = line.split_once(" = { ")?;
    let (value, why) = match (profile, name) {
        (Profile::Cloud, "sqlite_database") => (
            format!("{{ default = \"{ONE_DATABASE}\" }}"),
            "the platform's one database",
        ),
        (Profile::Cloud, "tenant_concurrency_limit") => (
            "{ default = \"off\" }".to_owned(),
            "no atomic increments: a lost decrement would hold a slot",
        ),
        (Profile::Akamai, "postgres_host") => {
            ("{ required = true }".to_owned(), "no SQLite: PostgreSQL")
        }
        (Profile::Akamai, "identity_postgres" | "community_postgres" | "billing_postgres") => (
            "{ required = true, secret = true }".to_owned(),
            "no SQLite: PostgreSQL",
        ),
        (Profile::Akamai, "counts_postgres") => (
            "{ required = true, secret = true }".to_owned(),
            "no atomics, 50 key-value writes a second",
        ),
        _ => return None,
    };
    Some(format!("{name} = {value}  # {}: {why}", profile.platform()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin_toml;

    #[test]
    fn the_committed_hosted_manifests_are_what_spin_toml_generates() {
        let spin_toml = spin_toml();
        for profile in PROFILES {
            let generated = manifest(&spin_toml, profile);
            let committed = std::fs::read_to_string(manifest_path(profile)).unwrap_or_default();
            assert!(
                generated == committed,
                "deploy/{}/spin.toml is out of date: run \
                 `cargo run -p meridian-tools --bin hosted -- generate`",
                profile.name()
            );
        }
    }

    #[test]
    fn cloud_opens_one_database_and_akamai_none_each_from_its_own_build() {
        let spin_toml = spin_toml();
        let cloud = manifest(&spin_toml, Profile::Cloud);
        assert_eq!(cloud.matches("sqlite_databases = [\"default\"]").count(), 3);
        assert!(!cloud.contains("sqlite_databases = [\"identity\"]"));
        assert!(cloud.contains("sqlite_database = { default = \"default\" }  # "));
        assert!(cloud.contains("tenant_concurrency_limit = { default = \"off\" }  # "));
        assert!(cloud.contains("source = \"../../target/platforms/cloud/gateway.wasm\""));
        let akamai = manifest(&spin_toml, Profile::Akamai);
        assert!(!akamai.contains("sqlite_databases"));
        assert!(akamai.contains("counts_postgres = { required = true, secret = true }  # "));
        assert!(akamai.contains("postgres_host = { required = true }  # "));
        assert!(akamai.contains("source = \"../../target/platforms/akamai/billing.wasm\""));
        for text in [&cloud, &akamai] {
            assert!(!text.contains("target/wasm32-wasip2/release"));
            assert!(!text.contains(".build]"), "a build step of its own");
            assert!(!text.contains("\n\n\n"));
            assert_eq!(text.matches("[[trigger.http]]").count(), 4);
        }
    }

    #[test]
    fn deploying_twice_changes_nothing() {
        let spin_toml = spin_toml();
        for profile in PROFILES {
            let once = deployed(&spin_toml, profile, "target/wasm32-wasip2/release", "p");
            assert_eq!(
                deployed(&once, profile, "target/wasm32-wasip2/release", "p"),
                once
            );
        }
    }
}
