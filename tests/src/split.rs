//! The split layout: each of the four services in its own Spin app, one
//! manifest per service, generated from `spin.toml` so that routes,
//! variables, sources and build steps have one source of truth.
//!
//! A service's manifest keeps the application and the variables its
//! component uses, its trigger and its component tables, and makes its
//! route public (`/...`): a component whose route is private is served by
//! nothing but service chaining inside one app, and `spin up
//! --component-id` serves no route at all for it (measured on Spin 4.1).
//! What keeps an internal service private in the split layout is the
//! internal token its gate demands of every call, and the network: locally
//! each listens on loopback only, on a cluster behind a ClusterIP Service.
//! The generated files live in `deploy/split/<service>/spin.toml`; a test
//! fails when they differ from what `spin.toml` generates.

use std::path::PathBuf;

/// The four services, callers last: a service's manifest names the URLs of
/// those it calls.
pub const SERVICES: [&str; 4] = ["identity", "community", "billing", "gateway"];

/// Where a service's generated manifest lives.
pub fn manifest_path(service: &str) -> PathBuf {
    crate::repo_root()
        .join("deploy/split")
        .join(service)
        .join("spin.toml")
}

/// The manifest of `service` alone, from the text of `spin.toml`.
pub fn service_manifest(spin_toml: &str, service: &str) -> Result<String, String> {
    let blocks = blocks(spin_toml);
    let owned = |b: &Block| b.component().as_deref() == Some(service);
    let kept: Vec<&Block> = blocks.iter().filter(|b| owned(b)).collect();
    if !kept.iter().any(|b| b.header == "[[trigger.http]]") {
        return Err(format!("spin.toml has no trigger for {service}"));
    }
    let used = |name: &str| {
        let reference = format!("{{{{ {name} }}}}");
        kept.iter()
            .any(|b| b.lines.iter().any(|l| l.contains(&reference)))
    };
    let mut out = String::from(
        "# Generated from spin.toml for the split layout (one Spin app per service):\n\
         # `cargo run -p meridian-tools --bin split -- generate`. Do not edit.\n",
    );
    for block in &blocks {
        match block.header.as_str() {
            "" => {
                for line in block.lines.iter().filter(|l| is_content(l)) {
                    out.push_str(&format!("{line}\n"));
                }
            }
            "[application]" => {
                out.push_str("\n[application]\n");
                for line in &block.lines {
                    match line.strip_prefix("name = ") {
                        Some(name) => out.push_str(&format!(
                            "name = \"{}-{service}\"\n",
                            name.trim_matches('"')
                        )),
                        None if is_content(line) => out.push_str(&format!("{line}\n")),
                        None => {}
                    }
                }
            }
            "[variables]" => {
                out.push_str("\n[variables]\n");
                for line in block.lines.iter().filter(|l| is_content(l)) {
                    let name = line.split('=').next().unwrap_or("").trim();
                    if used(name) {
                        out.push_str(&format!("{line}\n"));
                    }
                }
            }
            _ if owned(block) => {
                out.push_str(&format!("\n{}\n", block.header));
                for line in block.lines.iter().filter(|l| is_content(l)) {
                    out.push_str(&format!("{}\n", relocate(line)));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// A line as it reads from `deploy/split/<service>/`: the route public,
/// paths three directories up.
fn relocate(line: &str) -> String {
    if line.trim() == "route = { private = true }" {
        return "route = \"/...\"".to_owned();
    }
    line.replace("source = \"target/", "source = \"../../../target/")
        .replace("workdir = \".\"", "workdir = \"../../..\"")
}

/// Not blank and not a comment: comments in `spin.toml` introduce the
/// next section, which may not be kept.
fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// A table header and the lines under it.
struct Block {
    header: String,
    lines: Vec<String>,
}

impl Block {
    /// The component a trigger or component table belongs to.
    fn component(&self) -> Option<String> {
        if self.header == "[[trigger.http]]" {
            return self.lines.iter().find_map(|l| {
                let value = l
                    .trim()
                    .strip_prefix("component")?
                    .trim()
                    .strip_prefix('=')?;
                Some(value.trim().trim_matches('"').to_owned())
            });
        }
        let name = self
            .header
            .strip_prefix("[component.")?
            .trim_end_matches(']');
        Some(name.split('.').next()?.to_owned())
    }
}

fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = vec![Block {
        header: String::new(),
        lines: Vec::new(),
    }];
    for line in text.lines() {
        if line.starts_with('[') {
            blocks.push(Block {
                header: line.trim().to_owned(),
                lines: Vec::new(),
            });
        } else if let Some(last) = blocks.last_mut() {
            last.lines.push(line.to_owned());
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin_toml;

    #[test]
    fn the_committed_split_manifests_are_what_spin_toml_generates() {
        for service in SERVICES {
            let generated = service_manifest(&spin_toml(), service).unwrap();
            let committed = std::fs::read_to_string(manifest_path(service)).unwrap_or_default();
            assert!(
                generated == committed,
                "deploy/split/{service}/spin.toml is out of date: run \
                 `cargo run -p meridian-tools --bin split -- generate`"
            );
        }
    }

    #[test]
    fn a_service_keeps_its_own_tables_and_variables_with_a_public_route() {
        let identity = service_manifest(&spin_toml(), "identity").unwrap();
        assert!(identity.contains("spin_manifest_version = 2\n"));
        assert!(identity.contains("name = \"meridian-identity\""));
        assert!(identity.contains("[component.identity]"));
        assert!(identity.contains("[component.identity.build]"));
        assert!(identity.contains("route = \"/...\""));
        assert!(!identity.contains("private = true"));
        assert!(!identity.contains("[component.gateway"));
        assert!(identity.contains("internal_token = { required = true, secret = true }"));
        assert!(!identity.contains("identity_url"), "identity calls no one");
        assert!(
            identity.contains("source = \"../../../target/wasm32-wasip2/release/identity.wasm\"")
        );
        let billing = service_manifest(&spin_toml(), "billing").unwrap();
        assert!(billing.contains("community_url = { default"));
        assert!(!billing.contains("billing_url"));
        let gateway = service_manifest(&spin_toml(), "gateway").unwrap();
        for url in ["identity_url", "community_url", "billing_url"] {
            assert!(gateway.contains(&format!("{url} = {{ default")), "{url}");
        }
        // The gateway checks it for the tenant-limit overrides, which live
        // in its own key-value store (read only on those routes).
        assert!(gateway.contains("admin_token = { required = true, secret = true }"));
        assert!(service_manifest(&spin_toml(), "nobody").is_err());
    }
}
