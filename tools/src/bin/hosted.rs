//! The hosted platforms' manifests.
//!
//! - `generate`: writes `deploy/cloud/spin.toml` and
//!   `deploy/akamai/spin.toml` from `spin.toml`
//!   (`meridian_e2e::hosted`: each platform's build, databases and
//!   variables). A test fails when the committed files differ from what
//!   `spin.toml` generates; `platforms` checks each against its platform.

use anyhow::{bail, Context};
use meridian_e2e::hosted::{manifest, manifest_path, PROFILES};
use meridian_e2e::repo_root;

fn main() -> anyhow::Result<()> {
    match meridian_tools::Positionals::from_env()?.raw(0) {
        Some("generate") => {}
        _ => bail!("usage: hosted generate"),
    }
    let spin_toml = std::fs::read_to_string(repo_root().join("spin.toml"))?;
    for profile in PROFILES {
        let path = manifest_path(profile);
        std::fs::create_dir_all(path.parent().context("a directory")?)?;
        std::fs::write(&path, manifest(&spin_toml, profile))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
