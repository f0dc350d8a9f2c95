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
/// by interface (versions aside).
const COMMON: &[&str] = &[
    "wasi:io/poll",
    "wasi:io/error",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure-seed",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:http/types",
    "wasi:http/outgoing-handler",
    "fermyon:spin/variables",
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
            "fermyon:spin/sqlite",
            "spin:postgres/postgres",
            "wasi:keyvalue/store",
            "wasi:keyvalue/atomics",
            "wasi:keyvalue/batch",
        ],
        manifest: "spin.toml",
        grants: Grants::RuntimeConfig,
    },
    Platform {
        name: "Fermyon Cloud (one SQLite database; PostgreSQL; key-value `store` only)",
        build: "target/platforms/cloud",
        offers: &[
            "fermyon:spin/sqlite",
            "spin:postgres/postgres",
            "wasi:keyvalue/store",
        ],
        manifest: "deploy/cloud/spin.toml",
        grants: Grants::Defaults {
            sqlite_databases: 1,
        },
    },
    Platform {
        name: "Akamai Functions (PostgreSQL, no SQLite; key-value `store` and `batch`)",
        build: "target/platforms/akamai",
        offers: &[
            "spin:postgres/postgres",
            "wasi:keyvalue/store",
            "wasi:keyvalue/batch",
        ],
        manifest: "deploy/akamai/spin.toml",
        grants: Grants::Defaults {
            sqlite_databases: 0,
        },
    },
];

/// The interfaces a component imports, versions stripped: its top-level
/// imports (a nested core module's are satisfied inside the component).
fn imports(wasm: &[u8]) -> Result<BTreeSet<String>> {
    let mut depth = 0usize;
    let mut names = BTreeSet::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let name = import?.name.0;
                    let interface = name.split('@').next().unwrap_or(name);
                    names.insert(interface.to_owned());
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
    let mut mismatches = Vec::new();
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
            let lacking: Vec<&str> = imported
                .iter()
                .map(String::as_str)
                .filter(|i| !COMMON.contains(i) && !platform.offers.contains(i))
                .collect();
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
