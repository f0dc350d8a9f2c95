//! Runs a command against a real `spin up`: starts the app on loopback,
//! runs the arguments as a command with `MERIDIAN_URL` (the gateway) and
//! `MERIDIAN_ADMIN_TOKEN` (the platform admin's token) in its environment,
//! then stops the app. Used by `scripts/clients.sh` for the generated
//! clients' workflows.
//!
//! The exit status is the command's; stopping the app fails the run when a
//! component trapped or a log line carried a secret.

use std::process::{Command, ExitCode};

use anyhow::Context;
use meridian_e2e::{SpinApp, ADMIN_TOKEN};

fn main() -> anyhow::Result<ExitCode> {
    // The program and its arguments, passed on as they are.
    let mut parser = lexopt::Parser::from_env();
    let mut args = parser.raw_args()?;
    let program = args
        .next()
        .context("usage: against PROGRAM [ARGS...] (run with the app's URL in MERIDIAN_URL)")?;
    let program = program.to_string_lossy().into_owned();
    let app = SpinApp::start();
    let status = Command::new(&program)
        .args(args)
        .env("MERIDIAN_URL", app.url())
        .env("MERIDIAN_ADMIN_TOKEN", ADMIN_TOKEN)
        .status()
        .with_context(|| format!("running {program}"))?;
    drop(app);
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
