//! The picture: docs/benchmarks.svg's latency CDFs and 504 times.

use std::fmt::Write as _;

use crate::expiry::Expiry;
use crate::postgres::PG_FLOOR;
use crate::wrk::Measured;
use crate::{FLOOR, SAME_WORK};

/// Each measurement's latency CDF, one panel each, and the time-to-504's
/// when there is one.
pub(crate) fn picture(measured: &[Measured], expiry: &[Expiry]) -> String {
    {
        const W: f64 = 420.0;
        const H: f64 = 260.0;
        const COLORS: [&str; 4] = ["#9e9e9e", "#1f77b4", "#d62728", "#2ca02c"];
        // The same target in the same color in every panel.
        let color_of = |name: &str, j: usize| match name {
            "floor, no-op" => COLORS[0],
            FLOOR | PG_FLOOR => COLORS[1],
            SAME_WORK => COLORS[3],
            "Meridian" => COLORS[2],
            _ => COLORS[j % COLORS.len()],
        };
        let mut panels: Vec<Panel> = measured
            .iter()
            .map(|m| {
                (
                    format!("{}, {} conn.", m.scenario, m.connections),
                    "latency, ms".to_owned(),
                    m.runs
                        .iter()
                        .map(|(n, r)| {
                            (
                                n.to_string(),
                                r.cdf.iter().map(|(p, ms)| (*ms, *p)).collect(),
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        panels.extend((!expiry.is_empty()).then(|| {
            (
                "time-to-504 behind a hung downstream".to_owned(),
                "answer time − budget, ms (dashed: the target band)".to_owned(),
                expiry
                    .iter()
                    .map(|e| {
                        let n = e.times.len() as f64;
                        (
                            format!("{} ms", e.budget_ms),
                            e.times
                                .values()
                                .iter()
                                .enumerate()
                                .map(|(i, t)| {
                                    (t - e.budget_ms as f64, (i as f64 + 1.0) * 100.0 / n)
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            )
        }));
        let cols = 2.0;
        let rows = (panels.len() as f64 / cols).ceil();
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            W * cols,
            H * rows
        );
        for (i, (title, xlabel, series)) in panels.iter().enumerate() {
            let (ox, oy) = ((i % 2) as f64 * W, (i / 2) as f64 * H);
            let (left, right, top, bottom) = (ox + 50.0, ox + W - 15.0, oy + 30.0, oy + H - 40.0);
            let xs = series.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0));
            let (mut lo, mut hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
            let latency = i < measured.len();
            if latency {
                lo = 0.0;
                // The tail past p99 would flatten the rest.
                hi = series
                    .iter()
                    .filter_map(|(_, pts)| pts.iter().find(|p| p.1 >= 99.0).map(|p| p.0))
                    .fold(0.0, f64::max)
                    * 1.1;
            } else {
                // The target band: [budget - 10 ms, budget].
                lo = lo.min(-12.0);
                hi = hi.max(1.0);
            }
            if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
                hi = lo + 1.0;
            }
            let x = |v: f64| left + (v.clamp(lo, hi) - lo) / (hi - lo) * (right - left);
            let y = |p: f64| bottom - p / 100.0 * (bottom - top);
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>",
                left,
                oy + 18.0,
                xml(title)
            );
            let _ = writeln!(svg, "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>", right - left, bottom - top);
            for t in 0..=4 {
                let v = lo + (hi - lo) * f64::from(t) / 4.0;
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{v:.1}</text>",
                    x(v),
                    bottom + 14.0
                );
                let p = f64::from(t) * 25.0;
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{p:.0}%</text>",
                    left - 4.0,
                    y(p) + 4.0
                );
                let _ = writeln!(svg, "<line x1=\"{left}\" x2=\"{right}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>", y(p), y(p));
            }
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                (left + right) / 2.0,
                bottom + 30.0,
                xml(xlabel)
            );
            if !latency {
                for edge in [-10.0, 0.0] {
                    let _ = writeln!(svg, "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>", x(edge));
                }
            }
            for (j, (name, pts)) in series.iter().enumerate() {
                let color = color_of(name, j);
                let path: Vec<String> = pts
                    .iter()
                    .map(|(v, p)| format!("{:.1},{:.1}", x(*v), y(*p)))
                    .collect();
                let _ = writeln!(svg, "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>", path.join(" "));
                let ly = top + 14.0 + j as f64 * 14.0;
                let _ = writeln!(svg, "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>", right - 110.0, right - 95.0);
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{}\">{}</text>",
                    right - 90.0,
                    ly + 4.0,
                    xml(name)
                );
            }
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// A picture's panel: title, x-axis label, and its named series of
/// (x, cumulative %) points.
pub(crate) type Panel = (String, String, Vec<(String, Vec<(f64, f64)>)>);

pub(crate) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
