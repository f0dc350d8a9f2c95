//! Query strings, read as `application/x-www-form-urlencoded`.

/// The first value of a query parameter, decoded (`+` is a space, `%XX` a
/// byte; invalid UTF-8 is replaced). A parameter without `=` has the value
/// `""`.
pub fn query_param(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_percent_decoded() {
        assert_eq!(
            query_param("slug=maple-court&x=1", "slug").as_deref(),
            Some("maple-court")
        );
        assert_eq!(query_param("q=a%20b+c", "q").as_deref(), Some("a b c"));
        assert_eq!(query_param("q=100%", "q").as_deref(), Some("100%"));
        assert_eq!(query_param("flag", "flag").as_deref(), Some(""));
        assert_eq!(query_param("a=1", "b"), None);
        assert_eq!(query_param("a=1&a=2", "a").as_deref(), Some("1"));
        assert_eq!(query_param("q=%FF", "q").as_deref(), Some("\u{fffd}"));
    }
}
