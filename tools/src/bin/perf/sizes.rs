//! P5: each `.wasm` against the spin-sdk hello-world.

use anyhow::{Context, Result};
use meridian_e2e::repo_root;

/// Each component's `.wasm` and its ratio to the hello-world's.
pub(crate) fn sizes() -> Result<Vec<(&'static str, u64, f64)>> {
    let dir = repo_root().join("target/wasm32-wasip2/release");
    let size = |name: &str| -> Result<u64> {
        let path = dir.join(format!("{name}.wasm"));
        Ok(std::fs::metadata(&path)
            .with_context(|| format!("{} (build the components first)", path.display()))?
            .len())
    };
    let hello = size("hello")?;
    ["hello", "gateway", "identity", "community", "billing"]
        .into_iter()
        .map(|c| {
            let s = size(c)?;
            Ok((c, s, s as f64 / hello as f64))
        })
        .collect()
}
