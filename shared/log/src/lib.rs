//! Structured logs: what one request did, recorded as it happens
//! (`journal`: the calls, statements and failures of this invocation),
//! for the request's line (the platform's `http::request_line`). Ids, codes and
//! durations only — never a token, a body or an email.
#![forbid(unsafe_code)]

pub mod journal;

/// Writes `line` and its newline to stderr in one write. Spin gathers the
/// stderr of concurrent instances of a component into one stream; a line
/// written in pieces (as `eprintln!` does) can be split by another
/// instance's line, and neither would parse.
pub fn write_line(mut line: String) {
    use std::io::Write;
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), if
/// the header is one and the id is not all zeros.
pub fn trace_id(traceparent: Option<&str>) -> Option<&str> {
    let mut parts = traceparent?.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(parent, 16)
        && hex(flags, 2);
    valid.then_some(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_gives_its_trace_id_and_anything_else_none() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(trace_id(Some(tp)), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(trace_id(Some(bad)), None, "{bad}");
        }
        assert_eq!(trace_id(None), None);
    }
}
