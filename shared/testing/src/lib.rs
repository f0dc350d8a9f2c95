//! Host-side test kit: SQLite through rusqlite behind the store's
//! `Database` trait (`sqlite`), and request contexts with a generous budget.
#![forbid(unsafe_code)]

use std::time::Duration;

use meridian_platform::wire::request_id::RequestId;
use meridian_platform::{Deadline, RequestContext, UnixMillis};

mod sqlite;
pub use sqlite::HostSqlite;

/// A context at `now` with `budget` left, served by `hop`.
pub fn context_at(now: UnixMillis, budget: Duration, hop: &'static str) -> RequestContext {
    RequestContext::new(
        RequestId::parse("test-request").expect("valid id"),
        Deadline::after(now, budget),
        now,
        hop,
    )
}

/// Asserts that `migrations` lists exactly the files of
/// `migrations/<service>/` (and any it shares from `migrations/shared/`),
/// in order, with matching numbers and contents, so a file added on disk
/// but not embedded (or the reverse) fails a test.
pub fn assert_embeds_every_migration(
    service: &str,
    migrations: &[meridian_platform::store::migrate::Migration],
) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(service);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let shared = dir.join("../shared");
    let embedded: Vec<&str> = migrations
        .iter()
        .map(|m| m.name)
        .filter(|name| !shared.join(name).exists())
        .collect();
    assert_eq!(
        names, embedded,
        "migrations/{service} and the embedded list differ"
    );
    for m in migrations {
        let own = dir.join(m.name);
        let path = if own.exists() {
            own
        } else {
            shared.join(m.name)
        };
        let number: u32 = m.name[..4].parse().expect("NNNN_ prefix");
        assert_eq!(number, m.version, "{}", m.name);
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            m.sql,
            "{} differs from its file",
            m.name
        );
    }
}

/// The idempotency records' schema as every service migrates it (SQLite):
/// the table, then its claims' owner.
pub const IDEMPOTENCY_DDL: &str = concat!(
    include_str!("../../../migrations/shared/0002_idempotency_records.sql"),
    "\n",
    include_str!("../../../migrations/shared/0005_idempotency_claim_owner.sql")
);

/// A manual clock at a fixed start that lives as long as the test.
pub fn manual_clock() -> &'static meridian_platform::time::ManualClock {
    Box::leak(Box::new(meridian_platform::time::ManualClock::new(
        UnixMillis::from_millis(1_700_000_000_000),
    )))
}

/// An in-memory store on a manual clock, migrated with `migrations`.
pub fn migrated_store(
    migrations: &[meridian_platform::store::migrate::Migration],
) -> meridian_platform::store::db::Store<HostSqlite, &'static meridian_platform::time::ManualClock>
{
    migrated_store_on(manual_clock(), migrations)
}

/// An in-memory store on `clock`, migrated with `migrations`.
pub fn migrated_store_on(
    clock: &'static meridian_platform::time::ManualClock,
    migrations: &[meridian_platform::store::migrate::Migration],
) -> meridian_platform::store::db::Store<HostSqlite, &'static meridian_platform::time::ManualClock>
{
    use meridian_platform::Clock;
    let store = meridian_platform::store::db::Store::new(HostSqlite::in_memory(), clock);
    let ctx = context_at(clock.now(), Duration::from_secs(5), "migrate");
    meridian_platform::store::migrate::migrate(&store, &ctx, migrations).expect("migrations apply");
    store
}

/// The context of a request the gateway resolved to `tenant`, `actor` and `role`.
pub fn tenant_context(
    now: UnixMillis,
    hop: &'static str,
    tenant: &str,
    actor: &str,
    role: meridian_platform::tenancy::Role,
) -> RequestContext {
    context_at(now, Duration::from_secs(2), hop).with_tenant(
        meridian_platform::tenancy::TenantScope {
            tenant_id: tenant.parse().expect("tenant uuid"),
            actor_id: actor.parse().expect("actor uuid"),
            role,
        },
    )
}

/// Bodies a hostile or careless client might send to a route that reads
/// `fields`: random bytes, arbitrary JSON, and objects with the route's own
/// field names holding values of every type.
pub fn hostile_body(
    fields: &'static [&'static str],
) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        "\\PC{0,40}".prop_map(serde_json::Value::from),
        "[0-9a-f-]{36}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    let field_object = prop::collection::vec((prop::sample::select(fields), value.clone()), 0..6)
        .prop_map(|pairs| {
            let object: serde_json::Map<String, serde_json::Value> =
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            serde_json::to_vec(&object).expect("serialise")
        });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        value.prop_map(|v| serde_json::to_vec(&v).expect("serialise")),
        field_object,
    ]
}

/// A backoff sleeper that only moves a manual clock.
pub struct ClockSleeper<'c>(pub &'c meridian_platform::time::ManualClock);

impl meridian_platform::http::retry::Sleeper for ClockSleeper<'_> {
    async fn sleep(&self, d: Duration) {
        self.0.advance(d);
    }
}

/// Jitter that always picks zero, for exact schedules.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJitter;

impl meridian_platform::http::retry::Jitter for NoJitter {
    fn next_u64(&mut self) -> u64 {
        0
    }
}

/// The environment of a host test's calls: `H` for HTTP, the manual clock
/// (which only backoffs move), no jitter, the failure memory in a map.
/// (An environment that must also implement a component's own trait, such
/// as billing's `Env`, has to be the test's own type.)
pub struct ManualEnv<H>(std::marker::PhantomData<H>);

impl<H: meridian_platform::http::HttpClient> meridian_platform::http::upstream::Calls
    for ManualEnv<H>
{
    type Http = H;
    type Clock = &'static meridian_platform::time::ManualClock;
    type Sleeper = ClockSleeper<'static>;
    type Jitter = NoJitter;
    type Counters = meridian_platform::counts::LocalCounters;
}

/// The upstream caller of a host test: `http` on `clock`, which only
/// backoffs move, with no jitter, and the failure memory (`memory`) in a map.
pub fn upstream<E>(
    http: E::Http,
    clock: &'static meridian_platform::time::ManualClock,
    memory: meridian_platform::http::memory::MemoryConfig,
) -> meridian_platform::http::upstream::Upstream<E>
where
    E: meridian_platform::http::upstream::Calls<
        Clock = &'static meridian_platform::time::ManualClock,
        Sleeper = ClockSleeper<'static>,
        Jitter = NoJitter,
        Counters = meridian_platform::counts::LocalCounters,
    >,
{
    meridian_platform::http::upstream::Upstream {
        http,
        clock,
        sleeper: ClockSleeper(clock),
        jitter: NoJitter,
        counters: Default::default(),
        memory,
    }
}

/// Requests and answers of the handler tests, in one place.
pub mod http {
    use std::borrow::Borrow;

    use meridian_platform::budget::gate::{InternalGate, Passed};
    use meridian_platform::http::signed;
    use meridian_platform::http::{Request, RequestExt, Response, ResponseExt};
    use meridian_platform::wire::headers;
    use meridian_platform::wire::request_id::RequestId;
    use meridian_platform::wire::signature::CallKey;
    use meridian_platform::{Problem, UnixMillis};
    use serde_json::Value;

    /// A bodiless request: `method` and the path and query (or, for an
    /// outbound call, an absolute URL).
    pub fn request(method: &str, uri: &str) -> Request {
        ::http::Request::builder()
            .method(method)
            .uri(uri)
            .body(Vec::new())
            .expect("a valid method and URI")
    }

    /// A test's way of adding to a request.
    pub trait Build {
        /// Adds header `name` (any case).
        fn with_header(self, name: &str, value: impl AsRef<str>) -> Self;
        /// Sets the body.
        fn with_body(self, body: impl Into<Vec<u8>>) -> Self;
    }

    impl Build for Request {
        fn with_header(mut self, name: &str, value: impl AsRef<str>) -> Self {
            let name = ::http::HeaderName::from_bytes(name.as_bytes()).expect("a header name");
            let value =
                ::http::HeaderValue::from_bytes(value.as_ref().as_bytes()).expect("a header value");
            self.headers_mut().append(name, value);
            self
        }

        fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
            *self.body_mut() = body.into();
            self
        }
    }

    /// The request target of `path` and `query` (any text) as a client
    /// sends it: every byte a URI may not hold (non-ASCII text, spaces,
    /// quotes, `#`) percent-encoded, and the path starting with `/`.
    pub fn target(path: &str, query: &str) -> ::http::Uri {
        let encode = |raw: &str, extra: &[u8]| -> String {
            raw.bytes()
                .map(|b| {
                    let kept = b.is_ascii_alphanumeric()
                        || b"-._~!$&'()*+,;=:@/%".contains(&b)
                        || extra.contains(&b);
                    match kept {
                        true => char::from(b).to_string(),
                        false => format!("%{b:02X}"),
                    }
                })
                .collect()
        };
        let mut target = format!("/{}", encode(path.trim_start_matches('/'), b""));
        if !query.is_empty() {
            target = format!("{target}?{}", encode(query, b"?"));
        }
        target
            .parse()
            .expect("every byte left is one a URI may hold")
    }

    /// An outbound call as the service it is to receives it: the path and
    /// query only, with the `internal` headers the client sets last
    /// (`meridian_platform::http::internal_headers`) and its signature
    /// under `key`.
    pub fn as_received(
        mut request: Request,
        internal: Vec<(&'static str, String)>,
        key: &CallKey,
    ) -> Request {
        let target = request.path_and_query().to_owned();
        *request.uri_mut() = target.parse().expect("a path");
        for (name, value) in internal {
            let value = ::http::HeaderValue::from_str(&value).expect("a header value");
            request.headers_mut().insert(name, value);
        }
        let method = request.method().clone();
        signed(key, method.as_str(), &target, request.headers_mut());
        request
    }

    /// `inbound` through `gate` at `now`, as a service's hop passes it.
    pub fn through_gate(
        gate: &InternalGate<'_>,
        inbound: &Request,
        now: UnixMillis,
    ) -> Result<Passed, Problem> {
        gate.pass(
            RequestId::from_header_or_new(inbound.header(headers::REQUEST_ID)),
            inbound.method().as_str(),
            inbound.path_and_query(),
            |n| inbound.header(n),
            now,
        )
    }

    /// An answer with `status`, the given headers and `body`.
    pub fn response(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Response {
        let mut r = ::http::Response::builder().status(status);
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        r.body(body.into()).expect("a valid status and headers")
    }

    /// `GET path`.
    pub fn get(path: &str) -> Request {
        request("GET", path)
    }

    /// `POST path` with a JSON body.
    pub fn post(path: &str, body: impl Borrow<Value>) -> Request {
        request("POST", path).with_body(body.borrow().to_string())
    }

    /// `PATCH path` with a JSON body.
    pub fn patch(path: &str, body: impl Borrow<Value>) -> Request {
        request("PATCH", path).with_body(body.borrow().to_string())
    }

    /// The `code` of a problem answer (`""` when there is none).
    pub fn code(r: &Response) -> String {
        r.json_body()["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The fields a 422 names in `errors[]`, in order.
    pub fn fields(r: &Response) -> Vec<String> {
        r.json_body()["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["field"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}
