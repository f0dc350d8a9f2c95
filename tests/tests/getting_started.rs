//! docs/getting-started.md, run: every `$ ` command of its `console`
//! blocks, in order, in one shell, against a real `spin up` started with
//! the development admin token the page uses; each command's output
//! compared with the lines the page shows under it (`…` stands for any
//! text within a line). The page cannot go stale without this failing.

use std::process::Command;

use meridian_e2e::{SpinApp, SpinOptions};

/// The page, as the test reads it.
const PAGE: &str = include_str!("../../docs/getting-started.md");

/// Where the page says the app listens (`scripts/dev.sh`'s address).
const PAGE_URL: &str = "http://127.0.0.1:3000";

/// One `$ ` command of the page (its continuation lines joined as the
/// shell joins them) and the output shown under it.
#[derive(Debug)]
struct Step {
    command: String,
    shown: Vec<String>,
}

/// The steps of every `console` block, in order.
fn steps(page: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut in_console = false;
    let mut continued = false;
    for line in page.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continued = false;
            continue;
        }
        if !in_console {
            continue;
        }
        if continued {
            let step = steps.last_mut().expect("a command to continue");
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_owned(),
                shown: Vec::new(),
            });
            continued = command.ends_with('\\');
        } else {
            let step = steps.last_mut().expect("output follows a command");
            step.shown.push(line.to_owned());
        }
    }
    steps
}

/// Whether `line` is what `shown` shows, each `…` standing for any text.
fn matches(shown: &str, line: &str) -> bool {
    let parts: Vec<&str> = shown.split('…').collect();
    let (first, rest) = parts.split_first().expect("split yields one part");
    let Some(mut left) = line.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

#[test]
fn the_wildcard_stands_for_any_text_within_a_line() {
    assert!(matches("\"id\": \"…\",", "\"id\": \"01a2-77\","));
    assert!(matches("mrd_…", "mrd_"));
    assert!(matches("[…],[…]", "[1,2],[3]"));
    assert!(!matches("\"id\": \"…\",", "\"id\": \"01a2\""));
    assert!(!matches("exact", "exactly"));
    assert!(matches("exact", "exact"));
}

#[test]
fn the_page_has_steps_with_their_output() {
    let steps = steps(PAGE);
    assert!(steps.len() >= 8, "{steps:#?}");
    assert!(steps
        .iter()
        .any(|s| s.command.contains("x-meridian-timeout-ms: 1'")));
    // A command spread over lines is one step.
    assert!(steps
        .iter()
        .any(|s| s.command.contains("\\\n") && s.command.contains("idempotency-key")));
}

#[test]
fn the_getting_started_page_runs_as_shown() {
    let app =
        SpinApp::start_with(SpinOptions::default().variable("admin_token", "dev-admin-token"));
    let steps = steps(PAGE);
    // One shell for the whole page: a marker line before each command
    // tells where its output starts.
    let script: String = steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            format!(
                "printf '\\036%d\\n' {i}\n{}\n",
                step.command.replace(PAGE_URL, app.url())
            )
        })
        .collect();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(root)
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut outputs: Vec<Vec<String>> = vec![Vec::new(); steps.len()];
    let mut current = None;
    for line in stdout.lines() {
        match line.strip_prefix('\u{1e}') {
            Some(index) => current = index.parse::<usize>().ok(),
            None => {
                let at = current.expect("output before the first command");
                outputs[at].push(line.trim_end_matches('\r').to_owned());
            }
        }
    }
    for (step, got) in steps.iter().zip(&outputs) {
        let agrees =
            step.shown.len() == got.len() && step.shown.iter().zip(got).all(|(s, g)| matches(s, g));
        assert!(
            agrees,
            "docs/getting-started.md: `{}` printed\n{}\nwhere the page shows\n{}\n(stderr: {})",
            step.command,
            got.join("\n"),
            step.shown.join("\n"),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
