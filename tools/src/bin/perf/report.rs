//! The report: `target/bench/perf.json`, the markdown section of
//! docs/benchmarks.md and what it says about the machine.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use meridian_e2e::{repo_root, spin_binary};
use serde_json::{json, Value};

use crate::expiry::Expiry;
use crate::overload::Overload;
use crate::picture::picture;
use crate::wrk::{Measured, Run};
use crate::{Args, FLOOR};

pub(crate) fn command_output(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

pub(crate) fn spin_version() -> String {
    spin_binary().map_or_else(
        || "spin: not found".into(),
        |s| command_output(s, &["--version"]),
    )
}

pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}")
}

pub(crate) struct Report<'a> {
    pub(crate) args: &'a Args,
    pub(crate) measured: &'a [Measured],
    pub(crate) expiry: &'a [Expiry],
    pub(crate) overload: &'a Overload,
    pub(crate) sizes: &'a [(&'static str, u64, f64)],
}

impl Report<'_> {
    pub(crate) fn json(&self) -> Value {
        json!({
            "machine": machine(),
            "spin": spin_version(),
            "seconds": self.args.seconds,
            "rounds": self.args.rounds,
            "throughput": self.measured.iter().map(|m| json!({
                "scenario": m.scenario,
                "connections": m.connections,
                "runs": m.runs.iter().map(|(name, r)| json!({
                    "target": name, "requests": r.requests, "req_per_s": r.rps(),
                    "p50_ms": r.at(50.0), "p99_ms": r.at(99.0), "max_ms": r.max_ms,
                    "statuses": r.statuses, "cdf_ms": r.cdf,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "time_to_504": self.expiry.iter().map(|e| json!({
                "budget_ms": e.budget_ms, "requests": e.times.len(), "p50_ms": e.at(50.0),
                "p99_ms": e.at(99.0), "min_ms": e.at(0.0), "max_ms": e.at(100.0),
                "other_answers": e.other, "times_ms": e.times.values(),
            })).collect::<Vec<_>>(),
            "overload": {
                "budget_ms": self.overload.budget_ms, "connections": self.overload.connections,
                "requests": self.overload.run.requests, "statuses": self.overload.run.statuses,
                "p99_ms": self.overload.run.at(99.0), "max_ms": self.overload.run.max_ms,
                "late_statements": self.overload.late_statements,
                "statements": self.overload.statements_logged,
                "later_than_budget_plus_10ms_percent": self.overload.late_share(),
                "gateway_max_used_ms": self.overload.gateway_max_ms,
                "gateway_answers_with_nothing_left": self.overload.gateway_late,
            },
            "wasm_bytes": self.sizes.iter().map(|(c, s, r)| json!({"component": c, "bytes": s, "ratio": r})).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn markdown(&self) -> String {
        let mut md = String::new();
        let spin = spin_version();
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let _ = writeln!(
            md,
            "- **Command:** `scripts/bench.sh` (`perf --seconds {} --rounds {} --per-budget {} --write`)\n\
             - **When, where:** {date}; {}; {spin}; `wrk` 4.1, one thread, keep-alive.\n\
             - Each figure: {} alternating rounds of {} s per target; a percentile is the mean of the rounds'.\n",
            self.args.seconds,
            self.args.rounds,
            self.args.per_budget,
            machine(),
            self.args.rounds,
            self.args.seconds,
        );
        let _ = writeln!(md, "![Latency CDFs of Meridian and the floor, and the time-to-504 per budget](benchmarks.svg)\n");
        let _ = writeln!(md, "{}", self.targets());
        let _ = writeln!(md, "### P1: against the floor (target: p50 ≤ 1.3 ×, throughput ≥ 0.75 × the SQLite floor)\n");
        let _ = writeln!(md, "| scenario | conns | target | p50 | p99 | req/s | p50 × floor | p99 × floor | req/s × floor |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
        for m in self.measured {
            let floor = m.floor();
            for (name, r) in &m.runs {
                let ratio = |a: f64, b: f64| format!("{:.2}", a / b);
                let _ = writeln!(
                    md,
                    "| {} | {} | {name} | {:.2} ms | {:.2} ms | {:.0} | {} | {} | {} |",
                    m.scenario,
                    m.connections,
                    r.at(50.0),
                    r.at(99.0),
                    r.rps(),
                    ratio(r.at(50.0), floor.at(50.0)),
                    ratio(r.at(99.0), floor.at(99.0)),
                    ratio(r.rps(), floor.rps()),
                );
            }
        }
        let _ = writeln!(md, "\n### P2: time-to-504 behind a hung community (target: p99 within [budget − 10 ms, budget])\n");
        let _ = writeln!(
            md,
            "| budget | requests | min | p50 | p99 | max | other answers |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for e in self.expiry {
            let _ = writeln!(
                md,
                "| {} ms | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
                e.budget_ms,
                e.times.len(),
                e.at(0.0),
                e.at(50.0),
                e.at(99.0),
                e.at(100.0),
                e.other.len()
            );
        }
        let o = self.overload;
        let _ = writeln!(
            md,
            "\n### P3: overload (target: no statement after its deadline, no answer after budget + 10 ms)\n\n\
             {} connections, budget {} ms, {} s: {} requests, statuses {}; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms \
             at the client, {:.1} % of answers later than budget + 10 ms. The gateway's own clock: at most {} ms \
             of the budget used, {} answers with nothing left. Statements started after their request's \
             deadline: **{}** of {} run.\n",
            o.connections,
            o.budget_ms,
            self.args.seconds,
            o.run.requests,
            o.run
                .statuses
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            o.run.at(50.0),
            o.run.at(99.0),
            o.run.max_ms,
            o.late_share(),
            o.gateway_max_ms,
            o.gateway_late,
            o.late_statements,
            o.statements_logged,
        );
        let _ = writeln!(
            md,
            "### P5: `.wasm` sizes (target: ≤ 1.5 × the spin-sdk hello-world, same profile)\n"
        );
        let _ = writeln!(md, "| component | bytes | × hello-world |");
        let _ = writeln!(md, "|---|---|---|");
        for (c, s, r) in self.sizes {
            let _ = writeln!(md, "| {c} | {s} | {r:.2} |");
        }
        md
    }

    /// Each target, met or not, with its figures.
    pub(crate) fn targets(&self) -> String {
        let mark = |met: bool| if met { "**met**" } else { "**not met**" };
        let mut md = String::from("| target | status | this run |\n|---|---|---|\n");
        let reads: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| m.scenario.starts_with("GET"))
            .collect();
        let ratio = |m: &Measured, f: &dyn Fn(&Run) -> f64| f(m.run("Meridian")) / f(m.run(FLOOR));
        let p50: Vec<f64> = reads.iter().map(|m| ratio(m, &|r| r.at(50.0))).collect();
        let rps: Vec<f64> = reads.iter().map(|m| ratio(m, &|r| r.rps())).collect();
        let list = |v: &[f64]| {
            reads
                .iter()
                .zip(v)
                .map(|(m, x)| format!("{x:.2} × ({} conn.)", m.connections))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // Issue 59's targets at 8 connections, with each round's ratio.
        let at_8 = reads.iter().find(|m| m.connections == 8);
        let eight = |f: &dyn Fn(&Run) -> f64, met: &dyn Fn(f64) -> bool| match at_8 {
            Some(m) => {
                let x = ratio(m, f);
                let (lo, hi) = m.spread("Meridian", f);
                let figures = format!(
                    "{x:.2} × (rounds {lo:.2}–{hi:.2}, {} alternated pairs)",
                    self.args.rounds
                );
                (mark(met(x)), figures)
            }
            None => ("not measured", String::from("no run at 8 connections")),
        };
        let (status, figures) = eight(&|r| r.at(50.0), &|x| x <= 1.2);
        let p50_at_8 = format!("| P1 `GET` p50 at 8 connections ≤ 1.2 × | {status} | {figures} |");
        let (status, figures) = eight(&|r| r.rps(), &|x| x >= 0.85);
        let rps_at_8 =
            format!("| P1 `GET` throughput at 8 connections ≥ 0.85 × | {status} | {figures} |");
        let _ = writeln!(
            md,
            "| P1 `GET` p50 ≤ 1.3 × the SQLite floor | {} | {} |",
            mark(p50.iter().all(|x| *x <= 1.3)),
            list(&p50)
        );
        let _ = writeln!(
            md,
            "| P1 `GET` throughput ≥ 0.75 × | {} | {} |",
            mark(rps.iter().all(|x| *x >= 0.75)),
            list(&rps)
        );
        let _ = writeln!(md, "{p50_at_8}\n{rps_at_8}");
        let writes: Vec<&Measured> = self
            .measured
            .iter()
            .filter(|m| m.scenario.starts_with("POST"))
            .collect();
        let write_ratio = |m: &Measured, p: f64| m.run("Meridian").at(p) / m.floor().at(p);
        let p50: Vec<String> = writes
            .iter()
            .map(|m| format!("{:.2} × ({} conn.)", write_ratio(m, 50.0), m.connections))
            .collect();
        let _ = writeln!(
            md,
            "| P1 keyed `POST` p50 ≤ 1.5 × the same-work floor | {} | {} |",
            mark(writes.iter().all(|m| write_ratio(m, 50.0) <= 1.5)),
            p50.join(", ")
        );
        let at8: Vec<&&Measured> = writes.iter().filter(|m| m.connections == 8).collect();
        let _ = writeln!(
            md,
            "| P1 keyed `POST` p99 at 8 connections ≤ 2 × the same-work floor's | {} | {} |",
            mark(at8.iter().all(|m| write_ratio(m, 99.0) <= 2.0)),
            at8.iter()
                .map(|m| format!("{:.2} ×", write_ratio(m, 99.0)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let p2 = self.expiry.iter().all(|e| {
            let b = e.budget_ms as f64;
            e.at(99.0) >= b - 10.0 && e.at(100.0) <= b && e.times.len() >= 50
        });
        let _ = writeln!(
            md,
            "| P2 time-to-504 p99 in [budget − 10 ms, budget], none after, ≥ 50 each | {} | p99 {} |",
            mark(p2),
            self.expiry
                .iter()
                .map(|e| format!("{:.1} ms of {} ({} req.)", e.at(99.0), e.budget_ms, e.times.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let o = self.overload;
        let _ = writeln!(
            md,
            "| P3 no statement after its request's deadline | {} | {} of {} |",
            mark(o.late_statements == 0),
            o.late_statements,
            o.statements_logged
        );
        let _ = writeln!(
            md,
            "| P3 no answer after budget + 10 ms | {} | {:.1} % later at the client (max {:.1} ms of {} ms) |",
            mark(o.run.max_ms <= (o.budget_ms + 10) as f64),
            o.late_share(),
            o.run.max_ms,
            o.budget_ms
        );
        let worst = self.sizes.iter().map(|(_, _, r)| *r).fold(0.0, f64::max);
        let _ = writeln!(
            md,
            "| P5 each `.wasm` ≤ 1.5 × the hello-world | {} | at most {worst:.2} × |",
            mark(worst <= 1.5)
        );
        md
    }

    /// Five panels: the latency CDFs (GET and POST, 1 and 8 connections)
    /// and the time-to-504 per budget.
    pub(crate) fn svg(&self) -> String {
        picture(self.measured, self.expiry)
    }
}

pub(crate) const BEGIN: &str = "<!-- perf:begin (written by scripts/bench.sh) -->";

pub(crate) const END: &str = "<!-- perf:end -->";

/// Writes `markdown` as the section between `markers` of
/// docs/benchmarks.md, titled `title`, and its picture as `docs/<svg_file>`.
pub(crate) fn publish(
    markers: (&str, &str),
    title: &str,
    markdown: &str,
    svg_file: &str,
    svg: &str,
) -> Result<()> {
    let docs = repo_root().join("docs");
    write_section(&docs.join("benchmarks.md"), markers, title, markdown)?;
    std::fs::write(docs.join(svg_file), svg)?;
    eprintln!("wrote docs/benchmarks.md and docs/{svg_file}");
    Ok(())
}

/// The PostgreSQL section's markers (`--postgres`).
pub(crate) const PG_BEGIN: &str =
    "<!-- perf-postgres:begin (written by scripts/bench.sh --postgres) -->";

pub(crate) const PG_END: &str = "<!-- perf-postgres:end -->";

/// Replaces the block between `(begin, end)` in `path` with `title` and
/// `section`, or puts it before the first section when there is none.
pub(crate) fn write_section(
    path: &Path,
    (begin, end): (&str, &str),
    title: &str,
    section: &str,
) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let block = format!("{begin}\n## {title}\n\n{section}{end}");
    let updated = match (text.find(begin), text.find(end)) {
        (Some(b), Some(e)) if b < e => format!("{}{block}{}", &text[..b], &text[e + end.len()..]),
        _ => {
            let at = text.find("\n## ").map_or(text.len(), |i| i + 1);
            format!("{}{block}\n\n{}", &text[..at], &text[at..])
        }
    };
    std::fs::write(path, updated).with_context(|| format!("write {}", path.display()))
}
