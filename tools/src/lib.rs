//! What the tools share beyond the end-to-end harness: their arguments,
//! read by `lexopt`, and percentiles, computed one way.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result};

/// A tool's positional arguments, read once by `lexopt` (an option the
/// tool does not take is an error naming it).
#[derive(Debug, Clone, Default)]
pub struct Positionals(Vec<String>);

impl Positionals {
    /// The process's arguments.
    pub fn from_env() -> Result<Self> {
        Ok(Self::from_env_with_flags(&[])?.0)
    }

    /// The process's arguments, and which of `flags` (long options that
    /// take no value, `--name`) were given among them.
    pub fn from_env_with_flags(flags: &[&'static str]) -> Result<(Self, Vec<&'static str>)> {
        let mut parser = lexopt::Parser::from_env();
        let mut values = Vec::new();
        let mut given = Vec::new();
        while let Some(arg) = parser.next()? {
            match arg {
                lexopt::Arg::Value(value) => {
                    values.push(value.into_string().map_err(lexopt::Error::from)?)
                }
                lexopt::Arg::Long(name) if flags.contains(&name) => {
                    given.extend(flags.iter().find(|f| **f == name))
                }
                _ => return Err(arg.unexpected().into()),
            }
        }
        Ok((Self(values), given))
    }

    /// The `n`-th (from 0) as a `T`, or `default` when it was not given;
    /// one that does not parse is an error naming it.
    pub fn get<T: FromStr>(&self, n: usize, name: &str, default: T) -> Result<T>
    where
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        self.0
            .get(n)
            .map_or(Ok(default), |a| a.parse())
            .with_context(|| format!("argument {} ({name})", n + 1))
    }

    /// The `n`-th (from 0) as written, if given.
    pub fn raw(&self, n: usize) -> Option<&str> {
        self.0.get(n).map(String::as_str)
    }

    /// All of them, in order.
    pub fn all(&self) -> &[String] {
        &self.0
    }
}

/// The repository's root (the tools crate's parent).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Rust files below the repository's root, hidden folders, `target`,
/// `node_modules` and `fuzz` aside, and any folder `skip` names.
pub fn rust_files(skip: impl Fn(&Path) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![repository()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ignored = name.starts_with('.')
                || ["target", "node_modules", "fuzz"].contains(&name.as_str());
            if path.is_dir() {
                if !ignored && !skip(&path) {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    Ok(files)
}

/// Values sorted once, for their percentiles.
#[derive(Debug, Clone, Default)]
pub struct Sorted(Vec<f64>);

impl Sorted {
    /// `values`, sorted (NaN last).
    pub fn new(values: impl IntoIterator<Item = f64>) -> Self {
        let mut values: Vec<f64> = values.into_iter().collect();
        values.sort_by(f64::total_cmp);
        Self(values)
    }

    /// The `p`-quantile (0–1): the value at rank `(n − 1) · p`, rounded to
    /// the nearest (0.5 of an odd count is the middle one; 0 the least, 1
    /// the greatest); NaN when there are none.
    pub fn at(&self, p: f64) -> f64 {
        let last = self.0.len().saturating_sub(1);
        let rank = (last as f64 * p.clamp(0.0, 1.0)).round() as usize;
        self.0.get(rank.min(last)).copied().unwrap_or(f64::NAN)
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values, least first.
    pub fn values(&self) -> &[f64] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Sorted;

    #[test]
    fn percentiles_are_nearest_ranks_of_the_sorted_values() {
        let s = Sorted::new([5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.at(0.0), s.at(0.5), s.at(1.0)), (1.0, 3.0, 5.0));
        assert_eq!(s.at(0.99), 5.0);
        assert_eq!(s.at(0.2), 2.0);
        assert!(Sorted::new([]).at(0.5).is_nan());
        assert_eq!(Sorted::new([7.0]).at(0.99), 7.0);
    }
}
