//! Which platform can run each built component: its imports (the
//! interfaces its host must provide, read from the release build) against
//! the interfaces each platform publishes.
//!
//! Run: `cargo run -p meridian-tools --bin platforms` after building the
//! components for each platform (`scripts/build-for.sh spin|cloud|akamai`;
//! the test command does both). Prints, per platform, what each component
//! of that platform's build imports that the platform does not offer, and
//! fails when anything does: a component that starts importing something
//! a platform lacks is caught here. It reads each platform's manifest
//! too (`spin.toml`, `deploy/cloud/spin.toml`, `deploy/akamai/spin.toml`)
//! and fails when it deploys another build's Wasm or needs what the
//! platform lacks: more SQLite databases than it grants, or a store that
//! only a runtime configuration file could name where it reads none.

use std::collections::BTreeSet;

use anyhow::{bail, Context, Result};
use meridian_e2e::repo_root;
use wasmparser::{Parser, Payload};

/// The components, in the order they are reported.
const COMPONENTS: [&str; 4] = ["gateway", "identity", "community", "billing"];

/// What every Spin host offers a `spin-sdk` 5 (WASI 0.2) HTTP component,
/// by interface and compatible version ([`compatible`]: `0.2` takes any
/// `0.2.x`, `2` any `2.x.y`; a pre-release only itself).
const COMMON: &[&str] = &[
    "wasi:io/poll@0.2",
    "wasi:io/error@0.2",
    "wasi:io/streams@0.2",
    "wasi:clocks/monotonic-clock@0.2",
    "wasi:clocks/wall-clock@0.2",
    "wasi:random/random@0.2",
    "wasi:random/insecure-seed@0.2",
    "wasi:cli/environment@0.2",
    "wasi:cli/exit@0.2",
    "wasi:cli/stdin@0.2",
    "wasi:cli/stdout@0.2",
    "wasi:cli/stderr@0.2",
    "wasi:cli/terminal-input@0.2",
    "wasi:cli/terminal-output@0.2",
    "wasi:cli/terminal-stdin@0.2",
    "wasi:cli/terminal-stdout@0.2",
    "wasi:cli/terminal-stderr@0.2",
    "wasi:http/types@0.2",
    "wasi:http/outgoing-handler@0.2",
    "fermyon:spin/variables@2",
];

/// A platform: what it offers beyond [`COMMON`] (its published limits,
/// docs/deploy.md).
struct Platform {
    name: &'static str,
    /// Where its build's Wasm is, under the repository.
    build: &'static str,
    offers: &'static [&'static str],
    /// The manifest it deploys, under the repository.
    manifest: &'static str,
    /// What it lets a manifest ask for.
    grants: Grants,
    /// Whether it has service chaining (`*.spin.internal`, private routes).
    chaining: bool,
}

/// What a platform lets a manifest ask for.
enum Grants {
    /// A runtime configuration file names any store or database.
    RuntimeConfig,
    /// No runtime configuration file: the `default` key-value store, and
    /// at most this many SQLite databases, each the label `default`.
    Defaults { sqlite_databases: usize },
}

const PLATFORMS: [Platform; 3] = [
    Platform {
        name: "spin up, SpinKube (containerd-shim-spin v0.24, Spin 3.6.3)",
        build: "target/wasm32-wasip2/release",
        offers: &[
            "fermyon:spin/sqlite@2",
            // Since Spin 3.4 (so SpinKube's shim v0.24, Spin 3.6.3).
            "spin:postgres/postgres@4",
            "wasi:keyvalue/store@0.2.0-draft2",
            "wasi:keyvalue/atomics@0.2.0-draft2",
            "wasi:keyvalue/batch@0.2.0-draft2",
        ],
        manifest: "spin.toml",
        grants: Grants::RuntimeConfig,
        chaining: true,
    },
    Platform {
        name: "Fermyon Cloud (one SQLite database; key-value `store` only; no service chaining)",
        build: "target/platforms/cloud",
        // Which Spin it runs is not published, so only what its published
        // pages name: SQLite (Spin 2's interface) and the key-value store.
        // Not `spin:postgres@4.0.0`, which Spin 3.4 brought: the cloud
        // build has no PostgreSQL.
        offers: &["fermyon:spin/sqlite@2", "wasi:keyvalue/store@0.2.0-draft2"],
        manifest: "deploy/cloud/spin.toml",
        grants: Grants::Defaults {
            sqlite_databases: 1,
        },
        // "Local service chaining is not currently supported on Fermyon
        // Cloud", and chaining is the only way to a private route.
        chaining: false,
    },
    Platform {
        name: "Akamai Functions (PostgreSQL, no SQLite; key-value `store` and `batch`)",
        build: "target/platforms/akamai",
        offers: &[
            "spin:postgres/postgres@4",
            "wasi:keyvalue/store@0.2.0-draft2",
            "wasi:keyvalue/batch@0.2.0-draft2",
        ],
        manifest: "deploy/akamai/spin.toml",
        grants: Grants::Defaults {
            sqlite_databases: 0,
        },
        // Its published target lists local service chaining (docs/deploy.md).
        chaining: true,
    },
];

/// An interface with the version a host must offer to satisfy it, as
/// Wasmtime links them: `wasi:http/types@0.2.4` needs some `0.2`,
/// `fermyon:spin/sqlite@2.0.0` some `2`, and a pre-release
/// (`wasi:keyvalue/store@0.2.0-draft2`) exactly itself.
fn compatible(import: &str) -> String {
    let Some((interface, version)) = import.split_once('@') else {
        return import.to_owned();
    };
    if version.contains('-') {
        return import.to_owned();
    }
    let mut parts = version.split('.');
    let (major, minor) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    match major {
        "0" => format!("{interface}@0.{minor}"),
        major => format!("{interface}@{major}"),
    }
}

/// The interfaces a component imports, each with the version a host must
/// offer ([`compatible`]): its top-level imports (a nested core module's
/// are satisfied inside the component).
fn imports(wasm: &[u8]) -> Result<BTreeSet<String>> {
    let mut depth = 0usize;
    let mut names = BTreeSet::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    names.insert(compatible(import?.name.0));
                }
            }
            _ => {}
        }
    }
    Ok(names)
}

/// The imports of each component of the build in `dir`.
fn built(dir: &str) -> Result<Vec<(&'static str, BTreeSet<String>)>> {
    let mut built = Vec::new();
    for component in COMPONENTS {
        let path = repo_root().join(format!("{dir}/{component}.wasm"));
        let wasm = std::fs::read(&path).with_context(|| {
            format!(
                "{}: build the components first (scripts/build-for.sh)",
                path.display()
            )
        })?;
        built.push((component, imports(&wasm)?));
    }
    Ok(built)
}

/// What `platform`'s manifest asks for that the platform lacks, or Wasm
/// of another build it would deploy.
fn manifest_mismatches(platform: &Platform) -> Result<Vec<String>> {
    let path = repo_root().join(platform.manifest);
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let manifest: toml::Table = text
        .parse()
        .with_context(|| format!("{}: not TOML", platform.manifest))?;
    let dir = path.parent().context("the manifest's directory")?;
    let build = repo_root().join(platform.build);
    let components = manifest
        .get("component")
        .and_then(toml::Value::as_table)
        .context("no components")?;
    let labels = |component: &toml::Value, key: &str| -> Vec<String> {
        component
            .get(key)
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let mut mismatches = match platform.chaining {
        true => Vec::new(),
        false => chaining_needed(&manifest),
    };
    let mut databases = BTreeSet::new();
    for component in COMPONENTS {
        let Some(table) = components.get(component) else {
            mismatches.push(format!("{component}: not in the manifest"));
            continue;
        };
        // Relative to the manifest, as Spin reads it; both built by now.
        let source = table.get("source").and_then(toml::Value::as_str);
        let deployed = source.and_then(|s| std::fs::canonicalize(dir.join(s)).ok());
        let expected = std::fs::canonicalize(build.join(format!("{component}.wasm"))).ok();
        if deployed.is_none() || deployed != expected {
            mismatches.push(format!(
                "{component}: deploys {}, not {}/{component}.wasm",
                source.unwrap_or("no Wasm"),
                platform.build
            ));
        }
        if let Grants::Defaults { .. } = platform.grants {
            for store in labels(table, "key_value_stores") {
                if store != "default" {
                    mismatches.push(format!(
                        "{component}: key-value store {store:?} needs a runtime configuration file"
                    ));
                }
            }
            for label in labels(table, "sqlite_databases") {
                if label != "default" {
                    mismatches.push(format!(
                        "{component}: SQLite label {label:?} needs a runtime configuration file"
                    ));
                }
                databases.insert(label);
            }
        }
    }
    if let Grants::Defaults { sqlite_databases } = platform.grants {
        if databases.len() > sqlite_databases {
            mismatches.push(format!(
                "{} SQLite databases ({databases:?}); the platform grants {sqlite_databases}",
                databases.len()
            ));
        }
    }
    Ok(mismatches)
}

/// What of `imported` (each [`compatible`]) `platform` does not offer.
fn lacking<'a>(platform: &Platform, imported: &'a BTreeSet<String>) -> Vec<&'a str> {
    imported
        .iter()
        .map(String::as_str)
        .filter(|i| !COMMON.contains(i) && !platform.offers.contains(i))
        .collect()
}

/// What in `manifest` needs service chaining: a private route (reachable
/// only by chaining), or an outbound host or variable default that names a
/// `*.spin.internal` service, directly or through a variable's default.
fn chaining_needed(manifest: &toml::Table) -> Vec<String> {
    let mut needed = Vec::new();
    let defaults: Vec<(String, String)> = manifest
        .get("variables")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
        .filter_map(|(name, v)| Some((name.clone(), v.get("default")?.as_str()?.to_owned())))
        .collect();
    for (name, default) in &defaults {
        if default.contains(".spin.internal") {
            needed.push(format!(
                "variable {name} defaults to {default}, a chained service"
            ));
        }
    }
    let triggers = manifest
        .get("trigger")
        .and_then(|t| t.get("http"))
        .and_then(toml::Value::as_array);
    for trigger in triggers.into_iter().flatten() {
        let private = trigger
            .get("route")
            .and_then(|r| r.get("private"))
            .and_then(toml::Value::as_bool);
        if private == Some(true) {
            let component = trigger.get("component").and_then(toml::Value::as_str);
            needed.push(format!(
                "{}: a private route, reachable only by service chaining",
                component.unwrap_or("a trigger")
            ));
        }
    }
    let components = manifest.get("component").and_then(toml::Value::as_table);
    for (component, table) in components.into_iter().flatten() {
        let hosts = table
            .get("allowed_outbound_hosts")
            .and_then(toml::Value::as_array);
        for host in hosts.into_iter().flatten().filter_map(toml::Value::as_str) {
            // A template's variable, by its default.
            let resolved = host
                .strip_prefix("{{")
                .and_then(|h| h.strip_suffix("}}"))
                .map(str::trim)
                .and_then(|name| defaults.iter().find(|(n, _)| n == name))
                .map_or(host, |(_, default)| default.as_str());
            if resolved.contains(".spin.internal") {
                needed.push(format!(
                    "{component}: outbound host {host} is a chained service"
                ));
            }
        }
    }
    needed
}

fn main() -> Result<()> {
    let mut mismatches = Vec::new();
    for platform in &PLATFORMS {
        let built = built(platform.build)?;
        println!("{} — {}", platform.name, platform.build);
        let manifest = manifest_mismatches(platform)?;
        println!(
            "  {:<10} {}",
            "manifest",
            match manifest.is_empty() {
                true => format!("{}: asks only for what it grants", platform.manifest),
                false => format!("{}: {}", platform.manifest, manifest.join("; ")),
            }
        );
        mismatches.extend(
            manifest
                .into_iter()
                .map(|m| format!("{}: {}: {m}", platform.name, platform.manifest)),
        );
        for (component, imported) in &built {
            let lacking = lacking(platform, imported);
            let verdict = match lacking.is_empty() {
                true => "imports only what it offers".to_owned(),
                false => format!("lacks {}", lacking.join(", ")),
            };
            println!("  {component:<10} {verdict}");
            if !lacking.is_empty() {
                mismatches.push(format!("{}: {component} lacks {lacking:?}", platform.name));
            }
        }
    }
    if !mismatches.is_empty() {
        bail!(
            "components or manifests ask for what their platform does not offer:\n{}",
            mismatches.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needed(text: &str) -> Vec<String> {
        chaining_needed(&text.parse().unwrap())
    }

    #[test]
    fn versions_compare_as_wasmtime_links_them() {
        assert_eq!(compatible("wasi:http/types@0.2.12"), "wasi:http/types@0.2");
        assert_eq!(
            compatible("fermyon:spin/sqlite@2.0.0"),
            "fermyon:spin/sqlite@2"
        );
        assert_eq!(
            compatible("spin:postgres/postgres@4.0.0"),
            "spin:postgres/postgres@4"
        );
        assert_eq!(
            compatible("wasi:keyvalue/store@0.2.0-draft2"),
            "wasi:keyvalue/store@0.2.0-draft2"
        );
        // An older or newer major is another interface.
        assert_ne!(
            compatible("spin:postgres/postgres@3.0.0"),
            "spin:postgres/postgres@4"
        );
    }

    #[test]
    fn a_build_importing_an_interface_or_version_its_platform_lacks_is_refused() {
        let [spin, cloud, akamai] = &PLATFORMS;
        let imported =
            |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| compatible(n)).collect() };
        let sqlite_app = imported(&[
            "wasi:http/types@0.2.4",
            "fermyon:spin/sqlite@2.0.0",
            "wasi:keyvalue/store@0.2.0-draft2",
        ]);
        assert!(lacking(cloud, &sqlite_app).is_empty());
        // The cloud build as it was: PostgreSQL of Spin 3.4 on a platform
        // that does not say it runs it.
        let with_postgres =
            imported(&["fermyon:spin/sqlite@2.0.0", "spin:postgres/postgres@4.0.0"]);
        assert_eq!(lacking(cloud, &with_postgres), ["spin:postgres/postgres@4"]);
        assert!(lacking(spin, &with_postgres).is_empty());
        // Another major of an interface a platform offers is not offered.
        let older = imported(&["spin:postgres/postgres@3.0.0"]);
        assert_eq!(lacking(akamai, &older), ["spin:postgres/postgres@3"]);
        let atomics = imported(&["wasi:keyvalue/atomics@0.2.0-draft2"]);
        assert_eq!(lacking(cloud, &atomics).len(), 1);
    }

    #[test]
    fn the_cloud_manifest_needs_no_chaining_and_spin_toml_does() {
        let cloud = std::fs::read_to_string(repo_root().join("deploy/cloud/spin.toml")).unwrap();
        assert_eq!(needed(&cloud), Vec::<String>::new());
        let spin = std::fs::read_to_string(repo_root().join("spin.toml")).unwrap();
        assert_eq!(needed(&spin).len(), 3 + 3 + 3 + 1, "{:?}", needed(&spin));
    }

    #[test]
    fn a_planted_private_route_chained_host_or_chained_default_is_refused() {
        let cloud = std::fs::read_to_string(repo_root().join("deploy/cloud/spin.toml")).unwrap();
        let planted = [
            cloud.replacen(
                "route = \"/_meridian/billing/...\"",
                "route = { private = true }",
                1,
            ),
            cloud.replacen(
                "allowed_outbound_hosts = [\"{{ public_origin }}\"]",
                "allowed_outbound_hosts = [\"{{ public_origin }}\", \"http://billing.spin.internal\"]",
                1,
            ),
            cloud.replacen(
                "public_origin = { default = \"https://public-origin.invalid\" }",
                "public_origin = { default = \"http://identity.spin.internal\" }",
                1,
            ),
        ];
        for (i, text) in planted.iter().enumerate() {
            assert_ne!(text, &cloud, "plant {i} took");
            assert!(!needed(text).is_empty(), "plant {i} was not caught");
        }
    }
}
