//! A component's settings composed into one value: the manifest templates
//! the application's variables into one component variable, `settings`,
//! one `name=value` per line, so a request reads its configuration with
//! one host call instead of one per setting. The host expands the whole
//! template at each read, so what a request rarely needs is composed
//! apart (`after_failure`) and read only then (docs/configuration.md,
//! "What a variable costs the host"). The application's variables, and how an
//! operator sets them (`SPIN_VARIABLE_*`, a SpinApp's `variables`), do not
//! change.
//!
//! ```toml
//! [component.gateway.variables]
//! settings = """
//! request_budget_ms={{ request_budget_ms }}
//! internal_token={{ internal_token }}
//! """
//! ```
//!
//! A value runs to the end of its line, so none may hold a line break.

/// The parsed `settings` of one component.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    entries: Vec<(String, String)>,
}

impl Settings {
    /// From the variable's value: `name=value` lines; blank lines and
    /// lines without `=` are skipped, and a later line for the same name
    /// wins.
    pub fn parse(raw: &str) -> Self {
        let mut entries: Vec<(String, String)> = Vec::new();
        for line in raw.lines() {
            let Some((name, value)) = line.split_once('=') else {
                continue;
            };
            let name = name.trim();
            if name.is_empty() {
                continue;
            }
            entries.retain(|(n, _)| n != name);
            entries.push((name.to_owned(), value.trim_end_matches('\r').to_owned()));
        }
        Self { entries }
    }

    /// The value of `name`, when the settings hold it (an empty value is
    /// held, and means unset, as an empty variable does).
    pub fn lookup(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_name_and_value() {
        let s = Settings::parse(
            "request_budget_ms=3000\n\nidentity_url=http://identity.spin.internal\r\nbroken line\n=x\nadmission=\nadmission=off\n",
        );
        assert_eq!(s.lookup("request_budget_ms"), Some("3000"));
        assert_eq!(
            s.lookup("identity_url"),
            Some("http://identity.spin.internal")
        );
        assert_eq!(s.lookup("admission"), Some("off"), "the later line wins");
        assert_eq!(s.lookup("broken line"), None);
        assert_eq!(s.lookup("missing"), None);
    }

    #[test]
    fn a_value_keeps_its_equals_signs_and_an_empty_one_is_held() {
        let s = Settings::parse("internal_token=a=b=c\ntenant_rate_limit=\n");
        assert_eq!(s.lookup("internal_token"), Some("a=b=c"));
        assert_eq!(s.lookup("tenant_rate_limit"), Some(""));
    }
}
