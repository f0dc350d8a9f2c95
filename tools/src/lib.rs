//! What the tools share beyond the end-to-end harness: reading their
//! positional arguments.
#![forbid(unsafe_code)]

use std::str::FromStr;

use anyhow::{Context, Result};

/// The tool's `n`-th positional argument (from 0) as a `T`, or `default`
/// when it was not given; one that does not parse is an error naming it.
pub fn arg<T: FromStr>(n: usize, name: &str, default: T) -> Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    std::env::args()
        .nth(n + 1)
        .map_or(Ok(default), |a| a.parse())
        .with_context(|| format!("argument {} ({name})", n + 1))
}
