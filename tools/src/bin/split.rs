//! The split layout's command.
//!
//! - `generate`: writes `deploy/split/<service>/spin.toml` from `spin.toml`.
//! - `up [PORT]`: runs the four services, each in its own `spin up` on
//!   127.0.0.1 (the gateway on PORT, default 3000; identity, community and
//!   billing on the three ports after it), wired by their URL variables,
//!   on `.spin/split/` databases, until interrupted. Needs the components
//!   built for wasm32-wasip2 (`scripts/split.sh up` builds them first) and
//!   `internal_token` / `admin_token` in the environment as
//!   `SPIN_VARIABLE_INTERNAL_TOKEN` / `SPIN_VARIABLE_ADMIN_TOKEN`.

use std::process::{Child, Command};

use anyhow::{bail, Context};
use meridian_e2e::split::{manifest_path, service_manifest, SERVICES};
use meridian_e2e::{repo_root, spin_binary, write_split_runtime_config};

fn main() -> anyhow::Result<()> {
    let args = meridian_tools::Positionals::from_env()?;
    match args.raw(0) {
        Some("generate") => generate(),
        Some("up") => up(args.get(1, "PORT", 3000)?),
        _ => bail!("usage: split generate | split up [PORT]"),
    }
}

fn generate() -> anyhow::Result<()> {
    let spin_toml = std::fs::read_to_string(repo_root().join("spin.toml"))?;
    for service in SERVICES {
        let path = manifest_path(service);
        let manifest = service_manifest(&spin_toml, service).map_err(anyhow::Error::msg)?;
        std::fs::create_dir_all(path.parent().context("a directory")?)?;
        std::fs::write(&path, manifest).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn up(gateway_port: u16) -> anyhow::Result<()> {
    let spin = spin_binary().context("`spin` is not on PATH and SPIN_BIN is unset")?;
    for secret in ["SPIN_VARIABLE_INTERNAL_TOKEN", "SPIN_VARIABLE_ADMIN_TOKEN"] {
        if std::env::var_os(secret).is_none() {
            bail!("{secret} must be set");
        }
    }
    let root = repo_root();
    let state = root.join(".spin/split");
    std::fs::create_dir_all(&state)?;
    // The split layout's own databases, shared by no other layout, and one
    // key-value store file for the four processes (the resolution cache's
    // generations must be the ones identity moves on).
    let config = write_split_runtime_config(&state);
    let port_of = |service: &str| match service {
        "gateway" => gateway_port,
        "identity" => gateway_port + 1,
        "community" => gateway_port + 2,
        _ => gateway_port + 3,
    };
    let mut children: Vec<(&str, Child)> = Vec::new();
    for service in SERVICES {
        let mut command = Command::new(&spin);
        command
            .arg("up")
            .arg("--from")
            .arg(manifest_path(service))
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", port_of(service)))
            .arg("--runtime-config-file")
            .arg(&config)
            .arg("--state-dir")
            .arg(state.join(service));
        for callee in ["identity", "community", "billing"] {
            command.env(
                format!("SPIN_VARIABLE_{}_URL", callee.to_ascii_uppercase()),
                format!("http://127.0.0.1:{}", port_of(callee)),
            );
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {service}"))?;
        println!("{service:<10} http://127.0.0.1:{}", port_of(service));
        children.push((service, child));
    }
    // Serve until one of them stops (or the command is interrupted, which
    // stops them all: they share its process group).
    loop {
        for (service, child) in &mut children {
            if let Some(status) = child.try_wait()? {
                bail!("{service} stopped: {status}");
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
