//! Reading JSON request bodies into typed values, collecting every field
//! error instead of stopping at the first.

use std::collections::BTreeSet;
use std::fmt::Display;

use serde_json::{Map, Value};

use crate::wire::problem::{ErrorCode, FieldError, Problem};

/// The largest JSON body a service parses (any request body may be up to
/// `http::body::MAX_REQUEST_BODY_BYTES`, 1 MiB; the bodies the services
/// take are JSON and far smaller).
pub const MAX_JSON_BODY_BYTES: usize = 64 * 1024;

/// What a `PATCH` says about one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Patch<T> {
    /// Absent: leave the field as it is.
    Keep,
    /// `null`: clear the (optional) field.
    Clear,
    /// A new value.
    Set(T),
}

impl<T> Patch<T> {
    /// The value for a create, where absent and `null` both mean none.
    pub fn into_option(self) -> Option<T> {
        match self {
            Self::Set(v) => Some(v),
            Self::Keep | Self::Clear => None,
        }
    }

    /// Applies the patch to an optional field: kept, cleared or set.
    pub fn apply_to(self, slot: &mut Option<T>) {
        match self {
            Self::Keep => {}
            Self::Clear => *slot = None,
            Self::Set(v) => *slot = Some(v),
        }
    }

    /// Applies the patch to a required field (one read with `nullable`
    /// false, so never `Clear`): set, or kept as it is.
    pub fn apply_to_required(self, slot: &mut T) {
        if let Self::Set(v) = self {
            *slot = v;
        }
    }
}

/// A JSON object body being read field by field.
#[derive(Debug)]
pub struct JsonBody {
    object: Map<String, Value>,
    read: BTreeSet<String>,
    errors: Vec<FieldError>,
}

impl JsonBody {
    /// Parses a body: 413 when too large, 400 when not a JSON object. An
    /// empty body reads as `{}`.
    pub fn parse(body: &[u8]) -> Result<Self, Problem> {
        if body.len() > MAX_JSON_BODY_BYTES {
            return Err(Problem::new(
                ErrorCode::PayloadTooLarge,
                format!("the body must be at most {MAX_JSON_BODY_BYTES} bytes"),
            ));
        }
        let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(body).map_err(|e| {
                Problem::new(
                    ErrorCode::InvalidRequest,
                    format!("the body is not valid JSON: {e}"),
                )
            })?
        };
        match value {
            Value::Object(object) => Ok(Self {
                object,
                read: BTreeSet::new(),
                errors: Vec::new(),
            }),
            _ => Err(Problem::new(
                ErrorCode::InvalidRequest,
                "the body must be a JSON object",
            )),
        }
    }

    /// Records an error against `field`.
    pub fn error(&mut self, field: &str, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, message));
    }

    fn take(&mut self, field: &str) -> Option<Value> {
        self.read.insert(field.to_owned());
        self.object.get(field).cloned().filter(|v| !v.is_null())
    }

    /// A required string, trimmed, of `min..=max` characters.
    pub fn text(&mut self, field: &str, min: usize, max: usize) -> Option<String> {
        match self.optional_text(field, min, max) {
            Some(Some(v)) => Some(v),
            Some(None) => {
                self.error(field, "is required");
                None
            }
            None => None,
        }
    }

    /// An optional string: `Some(None)` when absent or null, `None` when
    /// invalid. The value is judged as sent — `min..=max` characters, no
    /// control character but tab and newline, not blank — and kept
    /// without surrounding whitespace. (Judging the sent value, not the
    /// trimmed one, is what lets the contract state the rule as a schema.)
    pub fn optional_text(&mut self, field: &str, min: usize, max: usize) -> Option<Option<String>> {
        match self.take(field) {
            None => Some(None),
            Some(Value::String(s)) => {
                let len = s.chars().count();
                if len < min || len > max {
                    self.error(field, format!("must be {min} to {max} characters"));
                    None
                } else if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
                    self.error(field, "must not contain control characters");
                    None
                } else if s.trim().is_empty() {
                    self.error(field, "must not be blank");
                    None
                } else {
                    Some(Some(s.trim().to_owned()))
                }
            }
            Some(_) => {
                self.error(field, "must be a string");
                None
            }
        }
    }

    /// A field of a `PATCH`: absent keeps, `null` clears (only when
    /// `nullable`), a string of `min..=max` characters replaces.
    pub fn patch_text(
        &mut self,
        field: &str,
        min: usize,
        max: usize,
        nullable: bool,
    ) -> Option<Patch<String>> {
        self.patch(field, nullable, |b| {
            b.optional_text(field, min, max).flatten()
        })
    }

    /// Whether the body has no fields at all.
    pub fn is_empty(&self) -> bool {
        self.object.is_empty()
    }

    /// A required JSON object, as is.
    pub fn object(&mut self, field: &str) -> Option<Map<String, Value>> {
        match self.take(field) {
            Some(Value::Object(o)) => Some(o),
            None => {
                self.error(field, "is required");
                None
            }
            Some(_) => {
                self.error(field, "must be a JSON object");
                None
            }
        }
    }

    /// A required string turned into `T` by `parse`, exactly as sent: a
    /// structured value (an id, an email, a code) is not trimmed.
    pub fn parsed<T, E: Display>(
        &mut self,
        field: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<T> {
        match self.take(field) {
            None => {
                self.error(field, "is required");
                None
            }
            Some(value) => self.parse_string(field, &value, parse),
        }
    }

    /// A structured field of a `PATCH` (or an optional one of a create):
    /// absent keeps, `null` clears (only when `nullable`), a string turned
    /// into `T` by `parse`, exactly as sent, replaces.
    pub fn patch_parsed<T, E: Display>(
        &mut self,
        field: &str,
        nullable: bool,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<Patch<T>> {
        self.patch(field, nullable, |b| {
            let value = b.object.get(field).cloned()?;
            b.parse_string(field, &value, parse)
        })
    }

    /// A `PATCH` field: absent keeps, `null` clears (an error unless
    /// `nullable`), anything else is read by `read`, which records its own
    /// errors.
    fn patch<T>(
        &mut self,
        field: &str,
        nullable: bool,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Patch<T>> {
        self.read.insert(field.to_owned());
        match self.object.get(field) {
            None => Some(Patch::Keep),
            Some(Value::Null) if nullable => Some(Patch::Clear),
            Some(Value::Null) => {
                self.error(field, "cannot be null");
                None
            }
            Some(_) => read(self).map(Patch::Set),
        }
    }

    fn parse_string<T, E: Display>(
        &mut self,
        field: &str,
        value: &Value,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<T> {
        let Value::String(raw) = value else {
            self.error(field, "must be a string");
            return None;
        };
        match parse(raw) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(field, e.to_string());
                None
            }
        }
    }

    /// A required integer in `min..=max`.
    pub fn integer(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        match self.optional_integer(field, min, max) {
            Some(None) => {
                self.error(field, "is required");
                None
            }
            read => read.flatten(),
        }
    }

    /// An optional integer in `min..=max`: `Some(None)` when absent (or
    /// null), `None` when present and not one.
    pub fn optional_integer(&mut self, field: &str, min: i64, max: i64) -> Option<Option<i64>> {
        match self.take(field) {
            None => Some(None),
            Some(Value::Number(n)) => match whole_number(&n) {
                Some(v) if (min..=max).contains(&v) => Some(Some(v)),
                _ => {
                    self.error(field, format!("must be a whole number from {min} to {max}"));
                    None
                }
            },
            Some(_) => {
                self.error(field, "must be a number");
                None
            }
        }
    }

    /// Ends reading (see [`Self::finish`]) and hands back the values read,
    /// all present: `let (a, b) = body.complete((a, b))?;` is how a typed
    /// `New*` value is built from a body in one step.
    pub fn complete<F: Complete>(self, fields: F) -> Result<F::Values, Problem> {
        self.finish()?;
        fields.values().ok_or_else(incomplete)
    }

    /// Ends reading: any field not read is unknown, and any error makes the
    /// whole body a 422 listing them all.
    pub fn finish(mut self) -> Result<(), Problem> {
        let unknown: Vec<String> = self
            .object
            .keys()
            .filter(|k| !self.read.contains(*k))
            .cloned()
            .collect();
        for field in unknown {
            self.error(&field, "is not a known field");
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(Problem::validation(self.errors))
        }
    }
}

/// A JSON number's whole value: `200` and `200.0` alike (JSON Schema
/// counts both as integers), `None` for a fraction or beyond ±2⁵³.
fn whole_number(n: &serde_json::Number) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= EXACT)
            // In range and whole: the conversion is exact.
            .map(|f| f as i64)
    })
}

/// The fields read from one body, as a tuple of `Option`s: each is `Some`
/// once the body was read without an error (a missing required field is an
/// error).
pub trait Complete {
    /// The values, unwrapped.
    type Values;
    /// The values, if every field has one.
    fn values(self) -> Option<Self::Values>;
}

macro_rules! complete_tuple {
    ($($field:ident),+) => {
        impl<$($field),+> Complete for ($(Option<$field>,)+) {
            type Values = ($($field,)+);
            #[allow(non_snake_case)]
            fn values(self) -> Option<Self::Values> {
                let ($($field,)+) = self;
                Some(($($field?,)+))
            }
        }
    };
}

complete_tuple!(A);
complete_tuple!(A, B);
complete_tuple!(A, B, C);
complete_tuple!(A, B, C, D);
complete_tuple!(A, B, C, D, E);
complete_tuple!(A, B, C, D, E, F);

/// The answer for a body whose reading produced no value for a field yet no
/// error either — which `finish` rules out; this keeps that path a 422
/// rather than a panic.
pub fn incomplete() -> Problem {
    Problem::validation(vec![FieldError::new("body", "is incomplete")])
}

/// Lower-cases and checks an email address, as sent: one `@`, a non-empty
/// local part, a dotted domain, no spaces or control characters, at most
/// 254 characters.
pub fn normalize_email(raw: &str) -> Result<String, &'static str> {
    let email = raw.to_ascii_lowercase();
    let valid = email.chars().count() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
                    && !domain.contains("..")
            }
            None => false,
        };
    if valid {
        Ok(email)
    } else {
        Err("must be an email address such as name@example.com")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_read_and_trimmed() {
        let mut b = JsonBody::parse(br#"{"name":"  Ada  ","age":36}"#).unwrap();
        assert_eq!(b.text("name", 1, 10).as_deref(), Some("Ada"));
        assert_eq!(b.integer("age", 0, 200), Some(36));
        assert!(b.finish().is_ok());
    }

    #[test]
    fn a_complete_body_hands_back_every_value() {
        let mut b = JsonBody::parse(br#"{"name":"Ada","age":36}"#).unwrap();
        let fields = (b.text("name", 1, 10), b.integer("age", 0, 200));
        assert_eq!(b.complete(fields).unwrap(), ("Ada".to_owned(), 36));
        let mut b = JsonBody::parse(br#"{"name":"Ada"}"#).unwrap();
        let fields = (b.text("name", 1, 10), b.integer("age", 0, 200));
        let p = b.complete(fields).unwrap_err();
        assert_eq!(p.status().as_u16(), 422);
        assert_eq!(p.errors()[0].field, "age");
    }

    #[test]
    fn text_is_judged_as_sent() {
        // Lengths count what was sent, surrounding spaces included; tab and
        // newline are the only control characters allowed; blank is refused.
        let accepted = [
            ("Ada", "Ada"),
            (" Ada\t", "Ada"),
            ("a\nb", "a\nb"),
            ("  x  ", "x"),
        ];
        for (sent, kept) in accepted {
            let mut b = JsonBody::parse(json!({ "f": sent }).to_string().as_bytes()).unwrap();
            assert_eq!(b.text("f", 1, 5).as_deref(), Some(kept), "{sent:?}");
        }
        for refused in ["", "   ", "\n\t", "  Ada  ", "a\rb", "\u{b}x", "a\u{85}"] {
            let mut b = JsonBody::parse(json!({ "f": refused }).to_string().as_bytes()).unwrap();
            assert_eq!(b.text("f", 1, 5), None, "{refused:?}");
            assert!(b.finish().is_err());
        }
    }

    #[test]
    fn structured_values_are_parsed_exactly_as_sent() {
        let body = br#"{"id":" 7","gone":null,"kept":"8","n":9}"#;
        let mut b = JsonBody::parse(body).unwrap();
        let exact = |s: &str| s.parse::<u8>();
        assert_eq!(b.parsed("id", exact), None);
        assert_eq!(b.patch_parsed("gone", true, exact), Some(Patch::Clear));
        assert_eq!(b.patch_parsed("kept", true, exact), Some(Patch::Set(8)));
        assert_eq!(b.patch_parsed("absent", true, exact), Some(Patch::Keep));
        assert_eq!(b.patch_parsed("n", true, exact), None);
        let p = b.finish().unwrap_err();
        let fields: Vec<&str> = p.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["id", "n"]);
        let mut b = JsonBody::parse(br#"{"id":null}"#).unwrap();
        assert_eq!(b.parsed("id", exact), None);
        assert_eq!(b.finish().unwrap_err().errors()[0].message, "is required");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut b = JsonBody::parse(br#"{"name":"","age":"x","extra":1}"#).unwrap();
        assert_eq!(b.text("name", 1, 10), None);
        assert_eq!(b.integer("age", 0, 200), None);
        assert_eq!(b.text("email", 1, 10), None);
        let p = b.finish().unwrap_err();
        assert_eq!(p.status().as_u16(), 422);
        let fields: Vec<&str> = p.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "age", "email", "extra"]);
    }

    #[test]
    fn malformed_or_non_object_bodies_are_400_and_huge_ones_413() {
        assert_eq!(JsonBody::parse(b"{nope").unwrap_err().status(), 400);
        assert_eq!(JsonBody::parse(b"[1,2]").unwrap_err().status(), 400);
        assert_eq!(
            JsonBody::parse(&vec![b' '; MAX_JSON_BODY_BYTES + 1])
                .unwrap_err()
                .status(),
            413
        );
        assert!(JsonBody::parse(b"").unwrap().finish().is_ok());
    }

    #[test]
    fn integers_out_of_range_or_fractional_are_refused() {
        for body in [r#"{"n":0}"#, r#"{"n":1.5}"#, r#"{"n":1e30}"#, r#"{"n":-3}"#] {
            let mut b = JsonBody::parse(body.as_bytes()).unwrap();
            assert_eq!(b.integer("n", 1, 100), None, "{body}");
        }
    }

    /// JSON Schema counts `100.0` an integer, as Schemathesis sent for
    /// `concurrency`: a whole number written with a fraction is one.
    #[test]
    fn a_whole_number_written_with_a_fraction_is_an_integer() {
        for (body, want) in [
            (r#"{"n":100.0}"#, Some(100)),
            (r#"{"n":1e2}"#, Some(100)),
            (r#"{"n":100}"#, Some(100)),
            (r#"{"n":100.5}"#, None),
        ] {
            let mut b = JsonBody::parse(body.as_bytes()).unwrap();
            assert_eq!(b.integer("n", 1, 100), want, "{body}");
        }
        let mut b = JsonBody::parse(br#"{"n":null}"#).unwrap();
        assert_eq!(b.optional_integer("n", 1, 100), Some(None), "null: absent");
    }

    #[test]
    fn a_patch_tells_keep_clear_and_set_apart() {
        let mut b = JsonBody::parse(br#"{"email":null,"name":"Bo","unit":null}"#).unwrap();
        assert_eq!(b.patch_text("email", 1, 10, true), Some(Patch::Clear));
        assert_eq!(
            b.patch_text("name", 1, 10, false),
            Some(Patch::Set("Bo".into()))
        );
        assert_eq!(b.patch_text("phone", 1, 10, true), Some(Patch::Keep));
        assert_eq!(b.patch_text("unit", 1, 10, false), None);
        assert_eq!(b.finish().unwrap_err().errors()[0].field, "unit");
    }

    #[test]
    fn a_patch_keeps_clears_or_sets_the_field_it_is_applied_to() {
        let mut optional = Some("a".to_owned());
        Patch::Keep.apply_to(&mut optional);
        assert_eq!(optional.as_deref(), Some("a"));
        Patch::Set("b".to_owned()).apply_to(&mut optional);
        assert_eq!(optional.as_deref(), Some("b"));
        Patch::Clear.apply_to(&mut optional);
        assert_eq!(optional, None);
        let mut required = "a".to_owned();
        Patch::Keep.apply_to_required(&mut required);
        assert_eq!(required, "a");
        Patch::Set("b".to_owned()).apply_to_required(&mut required);
        assert_eq!(required, "b");
    }

    #[test]
    fn objects_are_taken_whole() {
        let mut b = JsonBody::parse(br#"{"payload":{"a":1},"other":3}"#).unwrap();
        assert_eq!(b.object("payload").unwrap()["a"], 1);
        assert_eq!(b.object("other"), None);
    }

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            normalize_email("Ada@Example.ORG"),
            Ok("ada@example.org".into())
        );
        let longest = format!("{}@example.org", "é".repeat(242));
        assert_eq!(
            normalize_email(&longest).map(|e| e.chars().count()),
            Ok(254)
        );
        for bad in [
            "",
            " ada@example.org",
            "ada@example.org\n",
            "a\u{7}b@example.org",
            &format!("{longest}x"),
            "ada",
            "ada@",
            "@example.org",
            "ada@example",
            "a b@example.org",
            "a@b@c.org",
            "a@.org",
            "a@x..org",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }
}
