//! P1: `wrk` against Meridian and the floor apps, and a scenario's
//! rounds measured as one (`Measured`).

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{ensure, Context, Result};
use meridian_e2e::repo_root;
use serde_json::Value;

use crate::{Args, FLOOR, SAME_WORK};

/// One `wrk` run, as `bench/wrk/report.lua` prints it.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) requests: u64,
    pub(crate) seconds: f64,
    /// Answers that were not 2xx/3xx, and socket errors.
    pub(crate) failures: u64,
    pub(crate) statuses: BTreeMap<String, u64>,
    pub(crate) max_ms: f64,
    /// (percentile, ms).
    pub(crate) cdf: Vec<(f64, f64)>,
}

impl Run {
    pub(crate) fn parse(line: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(line).context("wrk's report line")?;
        let n = |k: &str| {
            v[k].as_u64()
                .with_context(|| format!("wrk report without {k}"))
        };
        let cdf = v["percentiles_us"]
            .as_array()
            .context("wrk report without percentiles")?
            .iter()
            .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()? / 1_000.0)))
            .collect();
        let statuses = v["statuses"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            requests: n("requests")?,
            seconds: n("duration_us")? as f64 / 1e6,
            failures: n("non_2xx_3xx")?
                + n("connect_errors")?
                + n("read_errors")?
                + n("write_errors")?
                + n("timeouts")?,
            statuses,
            max_ms: n("max_us")? as f64 / 1_000.0,
            cdf,
        })
    }

    /// The latency at percentile `p`, ms.
    pub(crate) fn at(&self, p: f64) -> f64 {
        self.cdf
            .iter()
            .find(|(q, _)| *q >= p - 1e-9)
            .or(self.cdf.last())
            .map_or(f64::NAN, |(_, ms)| *ms)
    }

    pub(crate) fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    /// Several rounds as one: requests and time summed, each percentile the
    /// mean of the rounds'.
    pub(crate) fn pooled(runs: &[Run]) -> Run {
        let first = &runs[0];
        let mut statuses = BTreeMap::new();
        for run in runs {
            for (k, n) in &run.statuses {
                *statuses.entry(k.clone()).or_insert(0) += n;
            }
        }
        Run {
            requests: runs.iter().map(|r| r.requests).sum(),
            seconds: runs.iter().map(|r| r.seconds).sum(),
            failures: runs.iter().map(|r| r.failures).sum(),
            statuses,
            max_ms: runs.iter().map(|r| r.max_ms).fold(0.0, f64::max),
            cdf: first
                .cdf
                .iter()
                .enumerate()
                .map(|(i, (p, _))| {
                    let sum: f64 = runs
                        .iter()
                        .map(|r| r.cdf.get(i).map_or(f64::NAN, |c| c.1))
                        .sum();
                    (*p, sum / runs.len() as f64)
                })
                .collect(),
        }
    }
}

/// What `wrk` is pointed at.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) name: &'static str,
    pub(crate) url: String,
    pub(crate) method: &'static str,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<String>,
    /// Whether every request gets its own Idempotency-Key (prefixed with
    /// the run's tag).
    pub(crate) keyed: bool,
}

pub(crate) fn wrk(target: &Target, connections: u32, seconds: u64, tag: &str) -> Result<Run> {
    let script = repo_root().join("bench/wrk/report.lua");
    let mut command = Command::new(std::env::var("WRK_BIN").unwrap_or_else(|_| "wrk".into()));
    command
        .args(["-t1", "--timeout", "10s"])
        .arg(format!("-c{connections}"))
        .arg(format!("-d{seconds}s"))
        .arg("-s")
        .arg(&script);
    for (name, value) in &target.headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
    command.arg(&target.url).arg("--").arg(target.method);
    if let Some(body) = &target.body {
        command.arg(body);
        if target.keyed {
            command.arg(tag);
        }
    }
    let out = command
        .output()
        .context("run wrk (scripts/bench.sh installs it; or set WRK_BIN)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "wrk failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("no report from wrk: {text}"))?;
    Run::parse(line)
}

/// One scenario at one connection count: each target's pooled rounds,
/// and each round on its own (for the spread of a ratio).
pub(crate) struct Measured {
    pub(crate) scenario: &'static str,
    pub(crate) connections: u32,
    pub(crate) runs: Vec<(&'static str, Run)>,
    pub(crate) rounds: Vec<(&'static str, Vec<Run>)>,
}

impl Measured {
    /// The floor this scenario's Meridian is compared with: the SQLite
    /// floor for reads, the same-work floor for the keyed write.
    pub(crate) fn floor(&self) -> &Run {
        self.run(self.floor_name())
    }

    /// Which target [`Self::floor`] is.
    fn floor_name(&self) -> &'static str {
        match self.scenario.starts_with("POST") {
            true => SAME_WORK,
            false => FLOOR,
        }
    }

    /// An error naming the first target that had a failed answer.
    pub(crate) fn no_failures(&self) -> Result<()> {
        for (name, run) in &self.runs {
            ensure!(
                run.failures == 0,
                "{} c={} {name}: {} failed answers ({:?})",
                self.scenario,
                self.connections,
                run.failures,
                run.statuses
            );
        }
        Ok(())
    }

    /// The least and the greatest over the rounds of `f` of `name`'s
    /// round against the floor's same round (they alternate, so each pair
    /// ran minutes apart at most).
    pub(crate) fn spread(&self, name: &str, f: &dyn Fn(&Run) -> f64) -> (f64, f64) {
        let rounds = |n: &str| {
            self.rounds
                .iter()
                .find(|(r, _)| *r == n)
                .map(|(_, runs)| runs.as_slice())
                .unwrap_or_default()
        };
        rounds(name)
            .iter()
            .zip(rounds(self.floor_name()))
            .map(|(a, b)| f(a) / f(b))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            })
    }

    pub(crate) fn run(&self, name: &str) -> &Run {
        &self
            .runs
            .iter()
            .find(|(n, _)| *n == name)
            .expect("measured target")
            .1
    }
}

/// Runs `targets` at `connections` for `rounds` rounds, alternating their
/// order, after a warm-up of each.
pub(crate) fn measure(
    scenario: &'static str,
    targets: &[Target],
    connections: u32,
    args: &Args,
) -> Result<Measured> {
    for target in targets {
        wrk(
            target,
            connections,
            1,
            &format!("warm-{scenario}-{connections}"),
        )?;
    }
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); targets.len()];
    for round in 0..args.rounds {
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let tag = format!("r{round}-c{connections}-{}", uuid::Uuid::new_v4().simple());
            let run = wrk(&targets[i], connections, args.seconds, &tag)?;
            eprintln!(
                "  {scenario} c={connections} round {round} {}: {} req, p50 {:.2} ms, p99 {:.2} ms, {:.0} req/s, {} failed",
                targets[i].name,
                run.requests,
                run.at(50.0),
                run.at(99.0),
                run.rps(),
                run.failures
            );
            runs[i].push(run);
        }
    }
    Ok(Measured {
        scenario,
        connections,
        runs: targets
            .iter()
            .zip(&runs)
            .map(|(t, r)| (t.name, Run::pooled(r)))
            .collect(),
        rounds: targets.iter().map(|t| t.name).zip(runs).collect(),
    })
}
