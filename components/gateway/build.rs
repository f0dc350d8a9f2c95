//! Embeds the API contract: `openapi.yaml` at the repository root becomes
//! compact JSON in `OUT_DIR`, served as `GET /openapi.json`, with an ETag
//! taken from its bytes. A document that does not parse fails the build.

use std::error::Error;
use std::path::Path;
use std::{env, fs};

use sha2::{Digest, Sha256};

fn main() -> Result<(), Box<dyn Error>> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi.yaml");
    println!("cargo:rerun-if-changed={}", source.display());
    let text =
        fs::read_to_string(&source).map_err(|e| format!("reading {}: {e}", source.display()))?;
    let document: serde_json::Value = serde_norway::from_str(&text)
        .map_err(|e| format!("{} is not valid YAML: {e}", source.display()))?;
    let json = serde_json::to_string(&document)?;
    let digest = Sha256::digest(json.as_bytes());
    // A SHA-256 digest is 32 bytes: its first 12 are always there.
    #[allow(clippy::indexing_slicing)]
    let etag = format!("\"{}\"", hex::encode(&digest[..12]));
    let out = env::var("OUT_DIR")?;
    fs::write(Path::new(&out).join("openapi.json"), json)?;
    fs::write(Path::new(&out).join("openapi.etag"), etag)?;
    Ok(())
}
