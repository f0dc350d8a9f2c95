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
//!   a lost decrement would hold shut — is off; and it has no service
//!   chaining, so no route is private: each service answers under
//!   `/_meridian/<service>/...`, the callers reach it through the app's
//!   own public origin (`public_origin`, the one outbound host besides the
//!   database's) and no `*.spin.internal` URL is left;
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
    // Whether the settings block being copied has its `public_origin` line.
    let mut origin_set = false;
    // The comment lines above the line being read: dropped with it.
    let mut comments = String::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, &line) in lines.iter().enumerate() {
        if line.starts_with('[') {
            in_build = line.starts_with("[component.") && line.ends_with(".build]");
        }
        // A dropped build table leaves the blank line before it and the
        // one after it: one is kept.
        if in_build || (line.is_empty() && out.ends_with("\n\n")) {
            continue;
        }
        if line.starts_with('#') {
            comments.push_str(line);
            comments.push('\n');
            continue;
        }
        if profile == Profile::Cloud {
            if line.starts_with("settings = ") {
                origin_set = false;
            }
            let next = lines.get(i + 1).copied().unwrap_or("");
            match for_cloud(line, next, &mut origin_set) {
                Cloud::Keep => {}
                Cloud::Drop => {
                    comments.clear();
                    continue;
                }
                Cloud::Replace(replaced) => {
                    out.push_str(&std::mem::take(&mut comments));
                    out.push_str(&replaced);
                    out.push('\n');
                    continue;
                }
            }
        }
        out.push_str(&std::mem::take(&mut comments));
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
    out.push_str(&comments);
    out
}

/// The variable through which a platform without service chaining is
/// called back, and its placeholder default (`.invalid`, RFC 2606: Spin
/// refuses an empty outbound host, and the components refuse to serve
/// until it is set).
const PUBLIC_ORIGIN: &str = "public_origin = { default = \"https://public-origin.invalid\" }";

/// What a line of `spin.toml` becomes on Fermyon Cloud.
enum Cloud {
    Keep,
    Drop,
    Replace(String),
}

/// The variables of PostgreSQL, which the cloud build has not (Fermyon
/// Cloud does not publish which `spin:postgres` it serves).
const POSTGRES_VARIABLES: [&str; 6] = [
    "postgres_host",
    "identity_postgres",
    "community_postgres",
    "billing_postgres",
    "postgres_migrator",
    "counts_postgres",
];

/// `line` (followed by `next`) as Fermyon Cloud deploys it. Without service
/// chaining: a private route becomes the service's public route under the
/// internal prefix; the services' URL variables and settings become the
/// one public origin (`origin_set`: whether the settings block already has
/// it); outbound hosts name the origin instead of the services. Without
/// PostgreSQL: its variables, settings and outbound host are gone.
fn for_cloud(line: &str, next: &str, origin_set: &mut bool) -> Cloud {
    let is_service_url = |name: &str| SERVICES.iter().any(|s| name == format!("{s}_url"));
    let is_postgres = |name: &str| POSTGRES_VARIABLES.contains(&name);
    // Its declaration, and a component's variable that is only its value.
    if let Some((name, _)) = line
        .split_once(" = { ")
        .or_else(|| line.split_once(" = \"{{ "))
    {
        if is_postgres(name) {
            return Cloud::Drop;
        }
    }
    // A setting of PostgreSQL stays, empty: a component looks up what its
    // settings hold without a host call, and one they lack with one.
    if let Some((setting, value)) = line.split_once("={{ ") {
        if is_postgres(value.trim_end_matches(" }}")) {
            return Cloud::Replace(format!("{setting}="));
        }
    }
    if line == "route = { private = true }" {
        return match next
            .strip_prefix("component = \"")
            .and_then(|rest| rest.strip_suffix('"'))
        {
            Some(component) => Cloud::Replace(format!(
                "route = \"{}/{component}/...\"",
                meridian_platform::wire::INTERNAL_PREFIX
            )),
            None => Cloud::Keep,
        };
    }
    if let Some((name, _)) = line.split_once(" = { default = ") {
        if is_service_url(name) {
            return match name == "identity_url" {
                true => Cloud::Replace(format!(
                    "# The app's own public URL (https://<app>.fermyon.app, or its custom\n\
                     # domain): without service chaining the components call each other\n\
                     # through it, each service under /_meridian/<service>, every call\n\
                     # signed (docs/deploy.md). Until it is set they refuse to serve.\n\
                     {PUBLIC_ORIGIN}  # Fermyon Cloud: no service chaining"
                )),
                false => Cloud::Drop,
            };
        }
    }
    if let Some((name, value)) = line.split_once('=') {
        if is_service_url(name) && value.starts_with("{{ ") {
            return match std::mem::replace(origin_set, true) {
                true => Cloud::Drop,
                false => Cloud::Replace("public_origin={{ public_origin }}".to_owned()),
            };
        }
    }
    if let Some(hosts) = line.strip_prefix("allowed_outbound_hosts = [") {
        let mut kept: Vec<String> = Vec::new();
        for host in hosts.trim_end_matches(']').split(", ") {
            let named = host
                .trim_matches('"')
                .strip_prefix("{{ ")
                .and_then(|h| h.strip_suffix(" }}"));
            let host = match named {
                Some(name) if is_postgres(name) => continue,
                Some(name) if is_service_url(name) => "\"{{ public_origin }}\"".to_owned(),
                _ => host.to_owned(),
            };
            if !kept.contains(&host) {
                kept.push(host);
            }
        }
        return Cloud::Replace(format!("allowed_outbound_hosts = [{}]", kept.join(", ")));
    }
    Cloud::Keep
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
        // No service chaining on Fermyon Cloud: public routes under the
        // prefix, the one origin, no `*.spin.internal` URL.
        assert!(!cloud.contains("private = true"));
        assert!(!cloud.contains("spin.internal"));
        for service in ["identity", "community", "billing"] {
            assert!(cloud.contains(&format!(
                "route = \"/_meridian/{service}/...\"\ncomponent = \"{service}\""
            )));
            assert!(!cloud.contains(&format!("{service}_url")));
        }
        assert_eq!(
            cloud
                .matches("allowed_outbound_hosts = [\"{{ public_origin }}\"]")
                .count(),
            2
        );
        assert!(
            !cloud.contains("postgres_host") && !cloud.contains("{{ counts_postgres }}"),
            "the cloud build has no PostgreSQL"
        );
        // Its settings stay, empty: looked up without a host call.
        assert_eq!(cloud.matches("\npostgres_address=\n").count(), 3);
        assert_eq!(
            cloud.matches("public_origin={{ public_origin }}").count(),
            2
        );
        assert!(cloud.contains(PUBLIC_ORIGIN));
        assert!(akamai.contains("private = true"));
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
