//! Starting and stopping `spin up` for one test.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::hosted::ONE_DATABASE;
use crate::profile::{profile, Profile};
use crate::{repo_root, ADMIN_TOKEN, INTERNAL_TOKEN};

use crate::client::Client;
use crate::split::{self, SERVICES};

/// The `spin` binary: `$SPIN_BIN`, else `spin` on `PATH`.
pub fn spin_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("SPIN_BIN").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("spin"))
            .find(|candidate| candidate.is_file())
    })
}

/// Variables to override when starting the app.
#[derive(Debug, Default, Clone)]
pub struct SpinOptions {
    /// `(variable, value)` pairs, set as `SPIN_VARIABLE_<NAME>`.
    pub variables: Vec<(&'static str, String)>,
    /// A different internal token for the gateway alone (a manifest copy is
    /// used), to see the services' gate refuse it.
    pub gateway_internal_token: Option<String>,
    /// Components whose Wasm is replaced by a test component's (a manifest
    /// copy is used): `(component, crate built for wasm32-wasip2)`.
    pub replaced: Vec<(&'static str, &'static str)>,
    /// Environment for `spin up` itself (e.g. `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub env: Vec<(&'static str, String)>,
    /// A runtime configuration file instead of the test's own SQLite files.
    pub runtime_config: Option<PathBuf>,
    /// Spin's default key-value store in a file (under the state
    /// directory), which a test can open, instead of in memory.
    pub key_value_file: bool,
    /// SQLite labels whose file is kept in another directory than the
    /// state directory (a small filesystem a test fills, say).
    pub database_dirs: Vec<(&'static str, PathBuf)>,
    /// Every application variable with a default pinned in a static
    /// variables provider of the runtime configuration (README
    /// "Configuration"): the manifest's defaults, the test's variables
    /// over them; the tokens stay with the environment.
    pub pinned_variables: bool,
    /// Up when `/healthz` answers at all, not only with a 200 (an app
    /// that refuses to serve, say).
    pub up_with_any_status: bool,
    /// One SQLite database for the whole app, as `MERIDIAN_DB=one` runs
    /// every test (`one_database`).
    pub one_database: bool,
    /// The services' PostgreSQL databases, as `MERIDIAN_DB=postgres` gives
    /// every app (a restart keeps the app's).
    pub postgres: Option<crate::postgres::PgDatabases>,
    /// The deployment's tokens: the suite's published ones by default.
    pub secrets: Secrets,
}

/// The admin and internal tokens an app is started with.
#[derive(Debug, Clone, Default)]
pub enum Secrets {
    /// [`INTERNAL_TOKEN`] and [`ADMIN_TOKEN`], published in this
    /// repository: like the development scripts, the app runs with the
    /// switch that accepts them (`allow_dev_secrets = "on"`), which each
    /// instance then reads as a second variable.
    #[default]
    Published,
    /// Tokens drawn for this app alone and the switch left off: what a
    /// sound deployment runs (the benchmarks measure that).
    Sound {
        /// The internal token.
        internal: String,
        /// The platform admin's token.
        admin: String,
    },
}

impl Secrets {
    /// Two fresh tokens of 64 hexadecimal digits (two UUID v4s each: 244
    /// random bits).
    pub fn sound() -> Self {
        let token = || {
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            )
        };
        Self::Sound {
            internal: token(),
            admin: token(),
        }
    }

    /// The internal token every component shares.
    pub fn internal(&self) -> &str {
        match self {
            Self::Published => INTERNAL_TOKEN,
            Self::Sound { internal, .. } => internal,
        }
    }

    /// The platform admin's token.
    pub fn admin(&self) -> &str {
        match self {
            Self::Published => ADMIN_TOKEN,
            Self::Sound { admin, .. } => admin,
        }
    }
}

impl SpinOptions {
    /// Starts the app with tokens of its own and the development switch
    /// off ([`Secrets::sound`]); [`SpinApp::admin_token`] is the admin's.
    pub fn sound_secrets(mut self) -> Self {
        self.secrets = Secrets::sound();
        self
    }

    /// Gives the gateway an internal token the services do not share.
    pub fn gateway_internal_token(mut self, token: &str) -> Self {
        self.gateway_internal_token = Some(token.to_owned());
        self
    }

    /// Serves `component`'s route with the test component `wasm_crate`
    /// (e.g. `hang` in place of `community`), reached by service chaining
    /// like the real one.
    pub fn replace_component(mut self, component: &'static str, wasm_crate: &'static str) -> Self {
        self.replaced.push((component, wasm_crate));
        self
    }

    /// Runs with the runtime configuration at `path` (relative to the
    /// repository) instead of SQLite files in the test's directory.
    pub fn runtime_config(mut self, path: &str) -> Self {
        self.runtime_config = Some(repo_root().join(path));
        self
    }

    /// Keeps the SQLite file of `label` as `dir/<label>.db` (the default
    /// is the test's state directory).
    pub fn database_in(mut self, label: &'static str, dir: &Path) -> Self {
        self.database_dirs.push((label, dir.to_owned()));
        self
    }

    /// Keeps the default key-value store in a file a test can read.
    pub fn key_value_file(mut self) -> Self {
        self.key_value_file = true;
        self
    }

    /// One SQLite database for the whole app ([`Self::one_database`]).
    pub fn one_database(mut self) -> Self {
        self.one_database = true;
        self
    }

    /// Whether this app has one SQLite database: asked for, or the whole
    /// run's layout.
    fn one_db(&self) -> bool {
        self.one_database || one_database()
    }

    /// Up when `/healthz` answers at all ([`Self::up_with_any_status`]).
    pub fn up_with_any_status(mut self) -> Self {
        self.up_with_any_status = true;
        self
    }

    /// Sets an environment variable of the `spin up` process.
    pub fn env(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.env.push((name, value.into()));
        self
    }

    /// The environment of a `spin up` whose components prove themselves
    /// with `internal_token`: the tokens, the test's variables (which win
    /// over any wiring set before them) and its own environment.
    fn env_for(&self, internal_token: &str) -> Vec<(String, String)> {
        let tokens = [
            (
                "SPIN_VARIABLE_INTERNAL_TOKEN".to_owned(),
                internal_token.to_owned(),
            ),
            (
                "SPIN_VARIABLE_ADMIN_TOKEN".to_owned(),
                self.secrets.admin().to_owned(),
            ),
        ];
        // The suite's tokens are published (in this repository): like the
        // development scripts, it sets the switch that accepts them (a
        // test's own variables win: the secrets test turns it off).
        let switch = matches!(self.secrets, Secrets::Published).then(|| {
            (
                "SPIN_VARIABLE_ALLOW_DEV_SECRETS".to_owned(),
                "on".to_owned(),
            )
        });
        let variables = self.variables.iter().map(|(name, value)| {
            let name = spin_variable(name);
            (name, value.clone())
        });
        let env = self.env.iter().map(|(n, v)| ((*n).to_owned(), v.clone()));
        // `MERIDIAN_DB=postgres`: each service on its own database.
        let postgres = self
            .postgres
            .iter()
            .flat_map(crate::postgres::PgDatabases::variables)
            .map(|(name, value)| (spin_variable(name), value));
        // `MERIDIAN_DB=one`: every service opens the one label.
        let one = self.one_db().then(|| {
            (
                "SPIN_VARIABLE_SQLITE_DATABASE".to_owned(),
                ONE_DATABASE.to_owned(),
            )
        });
        tokens
            .into_iter()
            .chain(switch)
            .chain(one)
            .chain(postgres)
            .chain(variables)
            .chain(env)
            .collect()
    }

    /// Sets a Spin variable.
    pub fn variable(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.variables.push((name, value.into()));
        self
    }

    /// Pins the variables in a static provider ([`Self::pinned_variables`]).
    pub fn pin_variables(mut self) -> Self {
        self.pinned_variables = true;
        self
    }

    /// The runtime configuration's static variables provider that pins
    /// every variable `spin.toml` gives a default, with this test's
    /// values over the defaults.
    fn static_provider(&self) -> String {
        let manifest = std::fs::read_to_string(repo_root().join("spin.toml")).expect("spin.toml");
        let mut values: Vec<(String, String)> = manifest_defaults(&manifest);
        for (name, value) in &self.variables {
            match values.iter_mut().find(|(n, _)| n == name) {
                Some(pinned) => pinned.1.clone_from(value),
                None => values.push(((*name).to_owned(), value.clone())),
            }
        }
        let values: Vec<String> = values.iter().map(|(n, v)| format!("{n} = {v:?}")).collect();
        format!(
            "[[variables_provider]]\ntype = \"static\"\nvalues = {{ {} }}\n\n",
            values.join(", ")
        )
    }
}

/// The application variables of a manifest's `[variables]` table that
/// have a default (`name = { default = "value" }`), with it.
fn manifest_defaults(manifest: &str) -> Vec<(String, String)> {
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[variables]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| {
            let (name, rest) = l.split_once('=')?;
            let (_, value) = rest.split_once("default = \"")?;
            let (value, _) = value.split_once('"')?;
            Some((name.trim().to_owned(), value.to_owned()))
        })
        .collect()
}

/// How the app runs: one `spin up` with the private services reached by
/// service chaining, or each service in its own `spin up` (the split
/// layout, `MERIDIAN_LAYOUT=split`), wired by URL variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `spin.toml` as it is.
    AllInOne,
    /// `deploy/split/<service>/spin.toml`, four processes.
    Split,
}

impl Layout {
    /// The layout the suite runs: `MERIDIAN_LAYOUT=split`, else all-in-one.
    pub fn from_env() -> Self {
        match std::env::var("MERIDIAN_LAYOUT").as_deref() {
            Ok("split") => Self::Split,
            _ => Self::AllInOne,
        }
    }
}

/// A running app — one `spin up`, or four in the split layout — stopped
/// when dropped.
pub struct SpinApp {
    children: Vec<Child>,
    /// The split layout's services and their ports.
    split: Vec<(&'static str, u16)>,
    /// Database servers (`MERIDIAN_DB=libsql`), kept across a restart.
    servers: Vec<Sqld>,
    /// The services' PostgreSQL databases (`MERIDIAN_DB=postgres`), kept
    /// across a restart.
    postgres: Option<crate::postgres::PgDatabases>,
    base_url: String,
    /// What this app's clients call; a restart points it at the new port.
    followed: Arc<RwLock<String>>,
    state: tempfile::TempDir,
    /// The split layout's one key-value store file's directory (see
    /// [`key_value_section`]); new at each start.
    key_value_dir: Option<tempfile::TempDir>,
    /// Whether its services share one SQLite database.
    one_database: bool,
    /// Whether it runs on Spin's defaults, without a runtime configuration
    /// file (a hosted profile): its `default` store and SQLite label are
    /// then files in its Spin state directory.
    spin_defaults: bool,
    /// Whether its components are Meridian's, whose every log line is a
    /// request or event line (not so for the benchmark's floor).
    structured_logs: bool,
    /// Whether the test makes a component trap on purpose (a test build's
    /// trap point): then a trap is what it expects, not a failure.
    trap_expected: std::cell::Cell<bool>,
    /// The platform admin's token it runs with ([`Secrets::admin`]).
    admin_token: String,
}

impl SpinApp {
    /// Starts the app with default variables.
    pub fn start() -> Self {
        Self::start_with(SpinOptions::default())
    }

    /// Starts the app and waits until `/healthz` answers.
    ///
    /// Panics (failing the test) when `spin` is not available: the test
    /// command decides whether to run this suite at all, and a missing
    /// runtime must never look like a pass.
    pub fn start_with(options: SpinOptions) -> Self {
        Self::start_in(
            tempfile::tempdir().expect("state directory"),
            options,
            Vec::new(),
        )
    }

    /// Stops the app and starts it again on the same databases with other
    /// variables (e.g. to point a downstream at a failing stand-in and back).
    pub fn restart_with(mut self, options: SpinOptions) -> Self {
        self.children.iter_mut().for_each(stop);
        let state = std::mem::replace(&mut self.state, tempfile::tempdir().expect("scratch"));
        // The databases stay up: an app beside this one may use them too.
        let servers = std::mem::take(&mut self.servers);
        let mut options = options;
        options.postgres = self.postgres.take();
        let mut app = Self::start_in(state, options, servers);
        if let Ok(mut url) = self.followed.write() {
            url.clone_from(&app.base_url);
        }
        app.followed = self.followed.clone();
        app
    }

    fn start_in(state: tempfile::TempDir, options: SpinOptions, mut servers: Vec<Sqld>) -> Self {
        // `MERIDIAN_DB=postgres`: the services on databases of their own
        // (an app with one SQLite database keeps its one file).
        let mut options = options;
        if options.postgres.is_none() && !options.one_db() {
            options.postgres = crate::postgres::server()
                .map(|server| crate::postgres::PgDatabases::create(&server));
        }
        let postgres = options.postgres.clone();
        let key_value_dir = (Layout::from_env() == Layout::Split).then(shared_store_dir);
        let shared = key_value_dir.as_ref().map(tempfile::TempDir::path);
        let runtime_config = match (
            &options.runtime_config,
            std::env::var("MERIDIAN_DB").as_deref(),
        ) {
            (Some(path), _) => path.clone(),
            // One database is one local file, whatever the run's databases.
            (None, _) if options.one_db() => {
                write_one_database_config(state.path(), options.key_value_file, shared)
            }
            (None, Ok("libsql")) if !servers.is_empty() => state.path().join("runtime-config.toml"),
            (None, Ok("libsql")) => {
                let (config, sqld) = start_libsql(
                    state.path(),
                    options.key_value_file,
                    shared,
                    &options.database_dirs,
                );
                servers = sqld;
                config
            }
            (None, _) => write_runtime_config_placing(
                state.path(),
                options.key_value_file,
                shared,
                &options.database_dirs,
            ),
        };
        // A hosted profile has no runtime configuration file: Spin's own
        // defaults hold (the `default` key-value store and SQLite label as
        // files in the state directory). A test that inspects the store
        // through a file, pins variables or places a database keeps its.
        let runtime_config = match profile() {
            Some(_)
                if options.runtime_config.is_none()
                    && !options.pinned_variables
                    && !options.key_value_file
                    && options.database_dirs.is_empty() =>
            {
                PathBuf::new()
            }
            _ => runtime_config,
        };
        if options.pinned_variables && options.runtime_config.is_none() {
            let generated = std::fs::read_to_string(&runtime_config).expect("runtime config");
            std::fs::write(
                &runtime_config,
                format!("{}\n{generated}", options.static_provider()),
            )
            .expect("runtime config");
        }
        // One database is one app's: the split layout has a database per
        // process.
        let layout = match options.one_db() {
            true => Layout::AllInOne,
            false => Layout::from_env(),
        };
        let mut app = match layout {
            Layout::AllInOne => {
                let manifest = manifest_for(state.path(), &options);
                Self::launch(state, &options, &manifest, &runtime_config)
            }
            Layout::Split => Self::launch_split(state, &options, &runtime_config),
        };
        app.servers = servers;
        app.postgres = postgres;
        app.key_value_dir = key_value_dir;
        app.one_database = options.one_db();
        app.spin_defaults = runtime_config.as_os_str().is_empty();
        app.admin_token = options.secrets.admin().to_owned();
        app.wait_until_up("/healthz", (!options.up_with_any_status).then_some(200));
        app
    }

    /// Every key in the app's `default` key-value store (started with
    /// [`SpinOptions::key_value_file`]), or in its counts' table where
    /// `counts_postgres` puts them (the Akamai profile).
    pub fn key_value_keys(&self) -> Vec<String> {
        if let Some(pg) = self.postgres.as_ref().filter(|pg| pg.has_counts()) {
            return pg.count_keys();
        }
        let store =
            rusqlite::Connection::open(self.key_value_store()).expect("the key-value store");
        let mut keys = store
            .prepare("SELECT key FROM spin_key_value")
            .expect("a key query");
        let keys = keys
            .query_map([], |r| r.get(0))
            .expect("the keys")
            .collect::<Result<_, _>>()
            .expect("the keys");
        keys
    }

    /// Forgets what the failure memory (every caller's retry budget and
    /// breakers, `meridian/<caller>/<service>/…`) remembers, where it
    /// outlives a restart: the key-value store's file, or the counts'
    /// PostgreSQL table (the Akamai profile). A store in memory forgets on
    /// its own at a restart.
    pub fn forget_failure_memory(&self) {
        if let Some(pg) = self.postgres.as_ref().filter(|pg| pg.has_counts()) {
            return pg.delete_counts("meridian/");
        }
        let file = self.key_value_store();
        if file.exists() {
            let store = rusqlite::Connection::open(file).expect("the key-value store");
            store
                .busy_timeout(Duration::from_secs(5))
                .expect("a busy timeout");
            store
                .execute("DELETE FROM spin_key_value WHERE key LIKE 'meridian/%'", [])
                .expect("the failure memory's keys deleted");
        }
    }

    /// Records every write to the app's `default` key-value store from now
    /// on (a file: [`SpinOptions::key_value_file`], or a hosted profile):
    /// a trigger per kind of write stamps each row Spin's store inserts,
    /// updates or deletes in a table beside it, with the wall clock.
    pub fn record_store_writes(&self) {
        let store =
            rusqlite::Connection::open(self.key_value_store()).expect("the key-value store");
        let stamp = "INSERT INTO meridian_writes VALUES \
                     (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))";
        // The store's table as Spin creates it on first open
        // (crates/key-value-spin): an app that has not yet written has none.
        let mut sql = String::from(
            "CREATE TABLE IF NOT EXISTS spin_key_value (store TEXT NOT NULL, \
             key TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (store, key));\n\
             CREATE TABLE IF NOT EXISTS meridian_writes (at_ms INTEGER NOT NULL);\n",
        );
        for (name, event) in [("i", "INSERT"), ("u", "UPDATE"), ("d", "DELETE")] {
            sql.push_str(&format!(
                "CREATE TRIGGER IF NOT EXISTS meridian_writes_{name} AFTER {event} \
                 ON spin_key_value BEGIN {stamp}; END;\n"
            ));
        }
        store.execute_batch(&sql).expect("the write triggers");
    }

    /// The writes [`Self::record_store_writes`] recorded, per wall-clock
    /// second: `(unix second, writes)`, in order.
    pub fn store_writes_per_second(&self) -> Vec<(i64, i64)> {
        let store =
            rusqlite::Connection::open(self.key_value_store()).expect("the key-value store");
        let mut per_second = store
            .prepare(
                "SELECT at_ms / 1000 AS s, COUNT(*) FROM meridian_writes GROUP BY s ORDER BY s",
            )
            .expect("a count query");
        let rows = per_second
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("the counts")
            .collect::<Result<_, _>>()
            .expect("the counts");
        rows
    }

    /// The value under `key` in the app's `default` key-value store
    /// (started with [`SpinOptions::key_value_file`]), or in its counts'
    /// table where `counts_postgres` puts them (a count as the store keeps
    /// an increment: 8 little-endian bytes).
    pub fn key_value(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(pg) = self.postgres.as_ref().filter(|pg| pg.has_counts()) {
            return pg.count_value(key);
        }
        let store = rusqlite::Connection::open(self.key_value_store()).ok()?;
        store
            .query_row(
                "SELECT value FROM spin_key_value WHERE store = 'default' AND key = ?1",
                [key],
                |r| r.get(0),
            )
            .ok()
    }

    /// Writes `value` under `key` in the app's `default` key-value store
    /// (started with [`SpinOptions::key_value_file`]), or in its counts'
    /// table where `counts_postgres` puts them, as anything else that can
    /// reach the store could.
    pub fn put_key_value(&self, key: &str, value: &[u8]) {
        if let Some(pg) = self.postgres.as_ref().filter(|pg| pg.has_counts()) {
            return pg.put_count_entry(key, value);
        }
        let store =
            rusqlite::Connection::open(self.key_value_store()).expect("the key-value store");
        store
            .busy_timeout(Duration::from_secs(5))
            .expect("a busy timeout");
        store
            .execute(
                "INSERT INTO spin_key_value (store, key, value) VALUES ('default', ?1, ?2)
                 ON CONFLICT (store, key) DO UPDATE SET value = excluded.value",
                rusqlite::params![key, value],
            )
            .expect("a write to the key-value store");
    }

    /// The benchmark's floor app (`bench/floor.toml`), set up with its
    /// tenant's rows.
    pub fn start_floor() -> Self {
        let floor = Self::start_manifest(
            &repo_root().join("bench/floor.toml"),
            &["mid", "back", "side", "ledger"],
            "/healthz",
        );
        let setup = floor.client().send("POST", "/setup", &[], None);
        assert_eq!(setup.status, 200, "floor setup: {}", setup.body);
        floor
    }

    /// The floor app with its PostgreSQL routes too (`GET /pg/residents`):
    /// `mid` on `pg`'s identity database, `back` on its community one.
    pub fn start_floor_on(pg: &crate::postgres::PgDatabases) -> Self {
        let options = SpinOptions::default()
            .variable("pg_host", pg.host())
            .variable("pg_mid", pg.address("identity"))
            .variable("pg_back", pg.address("community"));
        let floor = Self::start_manifest_with(
            &repo_root().join("bench/floor.toml"),
            &["mid", "back", "side", "ledger"],
            "/healthz",
            &options,
        );
        for setup in ["/setup", "/pg/setup"] {
            let answer = floor.client().send("POST", setup, &[], None);
            assert_eq!(answer.status, 200, "floor {setup}: {}", answer.body);
        }
        floor
    }

    /// A second `spin up` serving only the community component, publicly,
    /// on the same databases as `main`: the real community for a
    /// fault-injecting proxy to forward to (it still demands the internal
    /// token). Stopped when dropped.
    pub fn community_beside(main: &SpinApp) -> Self {
        Self::service_beside(main, "community")
    }

    /// A second `spin up` serving only `service` (`identity`, `community`
    /// or `billing`), publicly, on the same databases as `main`, so a test
    /// can call it directly — with the internal token and budget headers it
    /// chooses. Stopped when dropped.
    pub fn service_beside(main: &SpinApp, service: &str) -> Self {
        Self::service_beside_calling(main, service, &[])
    }

    /// [`Self::service_beside`] whose outbound URL variables (e.g.
    /// `community_url`) point at `urls`, which it may call.
    pub fn service_beside_calling(main: &SpinApp, service: &str, urls: &[(&str, String)]) -> Self {
        let state = tempfile::tempdir().expect("state directory");
        // On PostgreSQL, the same database as `main`'s service, by address.
        let (pg_host, pg_variable) = match &main.postgres {
            Some(pg) => (
                Some(pg.host()),
                format!("postgres_address = {:?}\n", pg.address(service)),
            ),
            None => (None, String::new()),
        };
        let mut allowed: Vec<String> = urls.iter().map(|(_, url)| url.clone()).collect();
        allowed.extend(pg_host);
        let wasm = component_wasm(service);
        let manifest = state.path().join("spin.toml");
        // As the run's hosted profile deploys it, if any.
        std::fs::write(
            &manifest,
            for_profile(format!(
                "spin_manifest_version = 2\n\n[application]\nname = \"meridian-{service}-only\"\n\n\
                 [variables]\ninternal_token = {{ required = true, secret = true }}\n\
                 admin_token = {{ required = true, secret = true }}\n\
                 allow_dev_secrets = {{ default = \"off\" }}\n\
                 sqlite_database = {{ default = \"\" }}\n\n\
                 [[trigger.http]]\nroute = \"/...\"\ncomponent = \"{service}\"\n\n\
                 [component.{service}]\nsource = {:?}\nsqlite_databases = [\"{}\"]\n\
                 allowed_outbound_hosts = {:?}\n\n\
                 [component.{service}.variables]\ninternal_token = \"{{{{ internal_token }}}}\"\n\
                 admin_token = \"{{{{ admin_token }}}}\"\n\
                 allow_dev_secrets = \"{{{{ allow_dev_secrets }}}}\"\n\
                 sqlite_database = \"{{{{ sqlite_database }}}}\"\n{pg_variable}{}",
                wasm.display().to_string(),
                match main.one_database {
                    true => ONE_DATABASE,
                    false => service,
                },
                allowed,
                urls.iter()
                    .map(|(name, url)| format!("{name} = {url:?}\n"))
                    .collect::<String>()
            )),
        )
        .expect("manifest");
        let mut runtime_config = main.state.path().join("runtime-config.toml");
        if main.spin_defaults {
            // `main` runs on Spin's defaults (a hosted profile): this
            // fixture opens the same files in `main`'s state directory.
            let spin_state = main.state.path().join("spin-state");
            runtime_config = state.path().join("runtime-config.toml");
            std::fs::write(
                &runtime_config,
                format!(
                    "[key_value_store.default]\ntype = \"spin\"\npath = {:?}\n\n\
                     [sqlite_database.{ONE_DATABASE}]\ntype = \"spin\"\npath = {:?}\n",
                    spin_state.join("sqlite_key_value.db").display().to_string(),
                    spin_state.join("sqlite_db.db").display().to_string(),
                ),
            )
            .expect("runtime config");
        }
        let app = Self::launch(state, &SpinOptions::default(), &manifest, &runtime_config);
        // Any answer means it is up: without the internal token it refuses.
        app.wait_until_up("/health", None);
        app
    }

    /// Another app from `manifest` (e.g. the benchmark's floor,
    /// `bench/floor.toml`), each SQLite label in `labels` a file in its own
    /// state directory, started once `ready` answers 200.
    pub fn start_manifest(manifest: &Path, labels: &[&str], ready: &str) -> Self {
        Self::start_manifest_with(manifest, labels, ready, &SpinOptions::default())
    }

    /// The same, with `options`' variables.
    pub fn start_manifest_with(
        manifest: &Path,
        labels: &[&str],
        ready: &str,
        options: &SpinOptions,
    ) -> Self {
        let state = tempfile::tempdir().expect("state directory");
        let config: String = labels
            .iter()
            .map(|label| sqlite_file(state.path(), label))
            .collect();
        let runtime_config = state.path().join("runtime-config.toml");
        std::fs::write(&runtime_config, config).expect("runtime config");
        let mut app = Self::launch(state, options, manifest, &runtime_config);
        app.structured_logs = false;
        app.wait_until_up(ready, Some(200));
        app
    }

    fn launch(
        state: tempfile::TempDir,
        options: &SpinOptions,
        manifest: &Path,
        runtime_config: &Path,
    ) -> Self {
        let spin = Spin {
            dir: state.path(),
            name: "",
            manifest,
            runtime_config,
        };
        let (child, port) = spin.spawn_serving(&options.env_for(options.secrets.internal()));
        Self::serving(vec![child], port, state)
    }

    /// The split layout: each service from its own generated manifest, in
    /// its own `spin up` on its own loopback port, callees first so that
    /// each caller is pointed at them by the URL variables (a test's own
    /// variables still win).
    fn launch_split(
        state: tempfile::TempDir,
        options: &SpinOptions,
        runtime_config: &Path,
    ) -> Self {
        let mut ports: Vec<(&'static str, u16)> = Vec::new();
        let mut children = Vec::new();
        for service in SERVICES {
            let wiring = ports.iter().map(|(s, port)| {
                let variable = format!("SPIN_VARIABLE_{}_URL", s.to_ascii_uppercase());
                (variable, format!("http://127.0.0.1:{port}"))
            });
            let token = match (service, &options.gateway_internal_token) {
                ("gateway", Some(token)) => token.as_str(),
                _ => options.secrets.internal(),
            };
            let env: Vec<(String, String)> = wiring.chain(options.env_for(token)).collect();
            let manifest = split_manifest_for(state.path(), service, options);
            let spin = Spin {
                dir: state.path(),
                name: service,
                manifest: &manifest,
                runtime_config,
            };
            let (child, port) = spin.spawn_serving(&env);
            children.push(child);
            ports.push((service, port));
        }
        let gateway = ports.last().map(|(_, port)| *port).expect("the gateway");
        let mut app = Self::serving(children, gateway, state);
        app.split = ports;
        app
    }

    fn serving(children: Vec<Child>, port: u16, state: tempfile::TempDir) -> Self {
        let url = format!("http://127.0.0.1:{port}");
        Self {
            children,
            split: Vec::new(),
            servers: Vec::new(),
            postgres: None,
            followed: Arc::new(RwLock::new(url.clone())),
            base_url: url,
            state,
            key_value_dir: None,
            structured_logs: true,
            trap_expected: std::cell::Cell::new(false),
            admin_token: ADMIN_TOKEN.to_owned(),
            one_database: false,
            spin_defaults: false,
        }
    }

    /// The split layout's internal services and their own URLs (none in
    /// the all-in-one layout).
    pub fn service_urls(&self) -> Vec<(&'static str, String)> {
        self.split
            .iter()
            .filter(|(s, _)| *s != "gateway")
            .map(|(s, port)| (*s, format!("http://127.0.0.1:{port}")))
            .collect()
    }

    /// What names `service` in the URL of a call to it (Spin's spans carry
    /// the URL): the service, reached by service chaining or under the
    /// internal prefix, or its `127.0.0.1:<port>` in the split layout.
    pub fn call_target(&self, service: &str) -> String {
        self.split.iter().find(|(s, _)| *s == service).map_or_else(
            || service.to_owned(),
            |(_, port)| format!("127.0.0.1:{port}"),
        )
    }

    /// The app's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.base_url
    }

    /// The file of the default key-value store (started with
    /// [`SpinOptions::key_value_file`]): the app's, or in the split layout
    /// the one file of all four processes.
    pub fn key_value_store(&self) -> PathBuf {
        if let Some(dir) = &self.key_value_dir {
            return dir.path().join(SHARED_KEY_VALUE);
        }
        self.state
            .path()
            .join("spin-state")
            .join("sqlite_key_value.db")
    }

    /// The SQLite file behind a label (`identity`, `community`, `billing`).
    pub fn database(&self, label: &str) -> PathBuf {
        let label = match self.one_database {
            true => ONE_DATABASE,
            false => label,
        };
        match self.spin_defaults {
            // Spin's default label, in its state directory.
            true if label == ONE_DATABASE => self.state.path().join("spin-state/sqlite_db.db"),
            _ => self.state.path().join(format!("{label}.db")),
        }
    }

    /// Stops the libSQL server of `label` (`MERIDIAN_DB=libsql`), as if
    /// its host went away.
    pub fn stop_database_server(&mut self, label: &str) {
        self.server(label).stop();
    }

    /// Starts the libSQL server of `label` again, on its port and data.
    pub fn start_database_server(&mut self, label: &str) {
        self.server(label).start();
    }

    fn server(&mut self, label: &str) -> &mut Sqld {
        self.servers
            .iter_mut()
            .find(|s| s.label == label)
            .unwrap_or_else(|| panic!("no libSQL server for {label}: run with MERIDIAN_DB=libsql"))
    }

    /// Creates a tenant through the app's public API.
    #[track_caller]
    pub fn tenant(&self, slug: &str) -> crate::api::TenantClient {
        crate::api::create_tenant_as(&self.client(), &self.admin_token, slug)
    }

    /// The platform admin's token this app runs with.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Brings every service's schema up to date through the admin's
    /// `POST /ops/migrate`, as an operator does after a deploy
    /// (docs/deploy.md), and returns what each applied.
    #[track_caller]
    pub fn migrate(&self) -> serde_json::Value {
        let r = crate::api::call(
            &self.client(),
            &self.admin_token,
            "POST",
            "/ops/migrate",
            None,
        );
        assert_eq!(r.status, 200, "POST /ops/migrate: {}", r.body);
        r.json()
    }

    /// The app with its default options and one tenant, `slug`: most
    /// tests' start.
    pub fn with_tenant(slug: &str) -> (Self, crate::api::TenantClient) {
        let app = Self::start();
        let tenant = app.tenant(slug);
        (app, tenant)
    }

    /// The threads of the processes that run the app's components (`spin
    /// trigger http`, the children of each `spin up`), from Linux's
    /// `/proc`; `None` where it cannot be read. The benchmarks show the
    /// runtime's thread pool with it: a blocking host call (a key-value
    /// operation, a variable) hands its worker to another thread, and the
    /// pool grows under a flood.
    pub fn runtime_threads(&self) -> Option<usize> {
        let read = |path: String| std::fs::read_to_string(path).ok();
        let mut threads = 0;
        for child in &self.children {
            let id = child.id();
            let runners = read(format!("/proc/{id}/task/{id}/children"))?;
            for pid in runners.split_whitespace() {
                let status = read(format!("/proc/{pid}/status"))?;
                threads += status
                    .lines()
                    .find_map(|l| l.strip_prefix("Threads:"))?
                    .trim()
                    .parse::<usize>()
                    .ok()?;
            }
        }
        Some(threads)
    }

    /// The CPU time the app's processes have used so far (each `spin up`
    /// and its `spin trigger http`, threads that have ended included),
    /// from Linux's `/proc`; `None` where it cannot be read.
    pub fn cpu_time(&self) -> Option<Duration> {
        let read = |path: String| std::fs::read_to_string(path).ok();
        // utime and stime, the 14th and 15th fields, in clock ticks; the
        // 2nd (the command's name, in brackets) may hold spaces.
        let ticks = |pid: &str| -> Option<u64> {
            let stat = read(format!("/proc/{pid}/stat"))?;
            let after_name = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        };
        let mut total = 0;
        for child in &self.children {
            let id = child.id().to_string();
            total += ticks(&id)?;
            for runner in read(format!("/proc/{id}/task/{id}/children"))?.split_whitespace() {
                total += ticks(runner)?;
            }
        }
        Some(Duration::from_secs_f64(
            total as f64 / clock_ticks_per_second(),
        ))
    }

    /// Kills every `spin up` process of the app at once (SIGKILL), with
    /// whatever requests it had in flight; [`Self::restart_with`] starts it
    /// again on the same databases.
    pub fn kill(&mut self) {
        self.children.iter_mut().for_each(stop);
    }

    /// The services' PostgreSQL databases (`MERIDIAN_DB=postgres`).
    pub fn postgres(&self) -> Option<&crate::postgres::PgDatabases> {
        self.postgres.as_ref()
    }

    /// A client for the app.
    pub fn client(&self) -> Client {
        Client::following(self.followed.clone())
    }

    /// The JSON lines `component` wrote to its stderr (request lines and
    /// event lines), as Spin keeps them; a line that is not JSON fails.
    pub fn log_lines(&self, component: &str) -> Vec<serde_json::Value> {
        let name = format!("{component}_stderr.txt");
        self.component_logs()
            .iter()
            .filter(|path| path.file_name().is_some_and(|n| *n == *name))
            .flat_map(|path| {
                std::fs::read_to_string(path)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// Whether the 504 `body` is `service`'s own: it names `service`, or it
    /// names the gateway and `service`'s log has the `budget_spent` event
    /// naming it and a request line with the 504 for the same request
    /// (`Some(true)`: the service's answer lost the race to the gateway's
    /// timer). `None`: neither.
    ///
    /// A service that gives up at its work deadline does so its answer
    /// reserve (12 ms) before the deadline its caller's own call ends at,
    /// so its 504 normally reaches the gateway first and names it. The
    /// reserve is a head start, not a guarantee: on a loaded machine its
    /// answer can come after the gateway's timer (seen in a CI run, the 504
    /// in time but named `gateway`, while billing's connection closing held
    /// the thread the gateway was to be woken on; docs/reliability.md). What a
    /// test of the service's deadline must prove either way is that the
    /// service stopped on its own, and its log says that. The lines can be
    /// written after the caller has its answer, so they are awaited for up
    /// to a second.
    pub fn own_504(&self, service: &str, body: &serde_json::Value) -> Option<bool> {
        if body["hop"] == service {
            return Some(false);
        }
        if body["hop"] != "gateway" {
            return None;
        }
        let id = &body["request_id"];
        let gave_up = |lines: Vec<serde_json::Value>| {
            let of_request: Vec<_> = lines.iter().filter(|l| l["request_id"] == *id).collect();
            of_request
                .iter()
                .any(|l| l["event"] == "budget_spent" && l["hop"] == service)
                && of_request
                    .iter()
                    .any(|l| l["status"] == 504 && l["code"] == "deadline_exceeded")
        };
        for _ in 0..20 {
            if gave_up(self.log_lines(service)) {
                return Some(true);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Every file under `<state>/logs` of every `spin up` of this app
    /// (one, or one per service in the split layout), sorted.
    fn component_logs(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = files_in(self.state.path())
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("spin-state"))
            })
            .flat_map(|state| files_in(&state.join("logs")))
            .collect();
        files.sort();
        files
    }

    /// What `spin up` wrote so far, and every component's output.
    pub fn logs(&self) -> String {
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        let mut outputs = files_in(self.state.path());
        outputs.retain(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("spin") && (name.ends_with(".out") || name.ends_with(".err"))
        });
        outputs.sort();
        // `spin up`'s own output, then each component's stdout and stderr
        // as Spin keeps them.
        outputs.extend(self.component_logs());
        outputs.iter().map(|p| read(p)).collect()
    }

    fn wait_until_up(&self, path: &str, status: Option<u16>) {
        self.wait_for_answer(&format!("{}{path}", self.base_url), status);
    }

    fn wait_for_answer(&self, url: &str, status: Option<u16>) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(reply) = Client::new(url).try_get("") {
                if status.is_none_or(|s| s == reply.status) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{url} did not answer in 60 s:\n{}", self.logs());
    }
}

impl SpinApp {
    /// Says that the test makes a component trap on purpose (a test
    /// build's trap point): the app then fails the test if none trapped,
    /// rather than if one did.
    pub fn expect_a_trap(&self) {
        self.trap_expected.set(true);
    }
}

impl Drop for SpinApp {
    fn drop(&mut self) {
        self.children.iter_mut().for_each(stop);
        self.servers.iter_mut().for_each(Sqld::stop);
        // A failing test's own message says what it saw; what the services
        // logged about it (a storage error's cause is logged, never sent)
        // is here, so a failure seen once in CI can be read afterwards.
        if std::thread::panicking() {
            let failures = self.failure_lines();
            if !failures.is_empty() {
                eprintln!("the services' failure lines:\n{}", failures.join("\n"));
            }
        }
        // A trapped component answers a bare 500 that a test might not look
        // at; no test may pass while one happened.
        let logs = self.logs();
        let trapped = logs.lines().any(|line| {
            TRAP_SIGNS.iter().any(|sign| line.contains(sign)) && !line.contains(SPIN_REFUSED_UTF8)
        });
        if !std::thread::panicking() && trapped != self.trap_expected.get() {
            match trapped {
                true => panic!("a component trapped during this test:\n{logs}"),
                false => panic!("the test made a component trap, and none did:\n{logs}"),
            }
        }
        // No log line may carry a secret: any token the suite was handed,
        // or the tokens the app runs with.
        let leaked = crate::client::leaked_secrets(&logs);
        if !std::thread::panicking() && !leaked.is_empty() {
            panic!("{} secret(s) appeared in the logs:\n{logs}", leaked.len());
        }
        // Every line a component wrote is a request line or an event line.
        let malformed = if self.structured_logs {
            self.malformed_log_lines()
        } else {
            Vec::new()
        };
        if !std::thread::panicking() && !malformed.is_empty() {
            panic!("log lines without their fields:\n{}", malformed.join("\n"));
        }
    }
}

/// The fields every request line has, and every event line.
const REQUEST_LINE_FIELDS: [&str; 11] = [
    "ts",
    "service",
    "request_id",
    "method",
    "route",
    "status",
    "budget_ms",
    "left_ms",
    "statements",
    "storage_us",
    "calls",
];
const EVENT_LINE_FIELDS: [&str; 3] = ["ts", "service", "event"];

impl SpinApp {
    /// The last of the components' `failure` event lines, each with its
    /// file's name: the causes of the 5xx answers the services gave.
    fn failure_lines(&self) -> Vec<String> {
        const SHOWN: usize = 20;
        let mut lines: Vec<String> = self
            .component_logs()
            .iter()
            .filter(|file| file.to_string_lossy().ends_with("_stderr.txt"))
            .flat_map(|file| {
                let name = file.file_name().unwrap_or_default().to_string_lossy();
                std::fs::read_to_string(file)
                    .unwrap_or_default()
                    .lines()
                    .filter(|line| line.contains(r#""event":"failure""#))
                    .map(|line| format!("{name}: {line}"))
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.drain(..lines.len().saturating_sub(SHOWN));
        lines
    }

    /// The lines of the components' stderr that are not JSON, or lack a
    /// field their kind must have.
    fn malformed_log_lines(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for file in self.component_logs() {
            let name = file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if !name.ends_with("_stderr.txt") {
                continue;
            }
            for line in std::fs::read_to_string(&file).unwrap_or_default().lines() {
                let fields: &[&str] = match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(v) if v.get("event").is_some() => &EVENT_LINE_FIELDS
                        .into_iter()
                        .filter(|f| v.get(f).is_none())
                        .collect::<Vec<_>>(),
                    Ok(v) => &REQUEST_LINE_FIELDS
                        .into_iter()
                        .filter(|f| v.get(f).is_none())
                        .collect::<Vec<_>>(),
                    Err(_) => &["(not JSON)"],
                };
                if !fields.is_empty() {
                    bad.push(format!("{name}: {line} (missing {fields:?})"));
                }
            }
        }
        bad
    }
}

/// One `spin up` to start: its manifest and runtime configuration, its
/// port, and where its state and output go (`spin-state`, `spin.out`,
/// `spin.err` in `dir`, suffixed `-<name>` for a named one).
struct Spin<'a> {
    dir: &'a Path,
    name: &'a str,
    manifest: &'a Path,
    runtime_config: &'a Path,
}

impl Spin<'_> {
    /// Starts it on a free port and waits until it says it serves there.
    /// A free port can be taken by another test between the pick and
    /// Spin's bind; Spin then stops ("already in use") and it is started
    /// again on another.
    fn spawn_serving(&self, env: &[(String, String)]) -> (Child, u16) {
        let suffix = self.suffix();
        let read = |name: String| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        for _ in 0..5 {
            let port = free_port();
            let mut child = self.spawn(port, env);
            let serving = format!("Serving http://127.0.0.1:{port}");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                if read(format!("spin{suffix}.out")).contains(&serving) {
                    return (child, port);
                }
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop(&mut child);
            let taken = format!("127.0.0.1:{port} is already in use");
            if !read(format!("spin{suffix}.err")).contains(&taken) {
                panic!(
                    "spin up{suffix} did not serve on {port}:\n{}{}",
                    read(format!("spin{suffix}.out")),
                    read(format!("spin{suffix}.err"))
                );
            }
        }
        panic!("spin up{suffix} found no free port in five tries");
    }

    fn suffix(&self) -> String {
        if self.name.is_empty() {
            String::new()
        } else {
            format!("-{}", self.name)
        }
    }

    fn spawn(&self, port: u16, env: &[(String, String)]) -> Child {
        let spin = spin_binary().expect("the end-to-end suite needs `spin` on PATH or SPIN_BIN");
        let suffix = self.suffix();
        let mut command = Command::new(spin);
        command
            .arg("up")
            .arg("--from")
            .arg(self.manifest)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(
                // None (an empty path): Spin's defaults, as a host without
                // runtime configuration files has them.
                (!self.runtime_config.as_os_str().is_empty())
                    .then(|| {
                        [
                            "--runtime-config-file".as_ref(),
                            self.runtime_config.as_os_str(),
                        ]
                    })
                    .into_iter()
                    .flatten(),
            )
            .arg("--state-dir")
            .arg(self.dir.join(format!("spin-state{suffix}")))
            .env_remove("RUST_LOG")
            // Its own origin, which a manifest without service chaining
            // (the cloud profile's) calls its services through; a test's
            // own value (a counting proxy's) comes later and wins. A
            // manifest that declares no such variable ignores it.
            .env(
                "SPIN_VARIABLE_PUBLIC_ORIGIN",
                format!("http://127.0.0.1:{port}"),
            )
            .envs(env.iter().map(|(n, v)| (n, v)))
            .current_dir(self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file(
                self.dir,
                &format!("spin{suffix}.out"),
            )))
            .stderr(Stdio::from(log_file(
                self.dir,
                &format!("spin{suffix}.err"),
            )));
        // Its own process group: `spin up` runs the app in a child process
        // (`spin trigger http`), which must stop with it.
        command.process_group(0);
        command.spawn().expect("start spin up")
    }
}

/// `service`'s split manifest, with absolute sources so it runs from the
/// test's directory, and a test component in place of the service's own
/// when the options replace it.
fn split_manifest_for(dir: &Path, service: &str, options: &SpinOptions) -> PathBuf {
    let generated = std::fs::read_to_string(split::manifest_path(service)).expect("split manifest");
    let source = format!("source = \"../../../target/wasm32-wasip2/release/{service}.wasm\"");
    assert!(
        generated.contains(&source),
        "{service}'s manifest has no source"
    );
    let path = dir.join(format!("spin-{service}.toml"));
    let manifest = built_sources(&generated, "../../../target/", &options.replaced);
    std::fs::write(&path, manifest).expect("manifest copy");
    path
}

/// `manifest` (whose sources start `source = "<target>`) with absolute
/// paths to the built components, so it runs from any directory, and each
/// `(component, test crate)` of `replaced` served by that crate's Wasm.
fn built_sources(manifest: &str, target: &str, replaced: &[(&str, &str)]) -> String {
    let built = repo_root().join("target");
    let mut patched = manifest.replace(
        &format!("source = \"{target}"),
        &format!("source = \"{}/", built.display()),
    );
    let release = built.join("wasm32-wasip2/release");
    for (component, wasm_crate) in replaced {
        let from = format!("{}/{component}.wasm\"", release.display());
        let to = format!("{}/{wasm_crate}.wasm\"", release.display());
        if !patched.contains(&from) {
            continue;
        }
        assert!(
            release.join(format!("{wasm_crate}.wasm")).is_file(),
            "{to} is not built"
        );
        patched = patched.replace(&from, &to);
    }
    patched
}

/// Stops `spin up` and everything it started: killing `spin up` alone
/// leaves its `spin trigger http` child serving, and hundreds of those
/// pile up over a few test runs.
fn stop(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// What Spin writes to its log when a component traps or a request fails
/// inside the runtime. Spin logs these at its default level; the suite
/// clears an inherited `RUST_LOG` so that no environment can hide them.
const TRAP_SIGNS: [&str; 2] = ["guest invocation failed", "Error processing request"];

/// What Spin logs when it refuses a request whose header value is not
/// UTF-8 before any component runs (docs/known-limits.md): not a trap.
pub const SPIN_REFUSED_UTF8: &str = "invalid utf-8 sequence";

/// The repository's manifest, or a copy with the gateway's internal token
/// replaced (sources made absolute so the copy builds nothing and loads the
/// same components).
fn manifest_for(dir: &Path, options: &SpinOptions) -> PathBuf {
    let original = repo_root().join("spin.toml");
    if options.gateway_internal_token.is_none()
        && options.replaced.is_empty()
        && !options.one_db()
        && profile().is_none()
    {
        return original;
    }
    let text = std::fs::read_to_string(&original).expect("spin.toml");
    let text = match options.one_db() {
        true => one_database_manifest(&text),
        false => text,
    };
    for (component, _) in &options.replaced {
        assert!(
            text.contains(&format!("[component.{component}]")),
            "no component {component} in spin.toml"
        );
    }
    let patched = for_profile(built_sources(&text, "target/", &options.replaced));
    let mut out = String::new();
    let mut in_gateway_vars = false;
    for line in patched.lines() {
        if line.starts_with('[') {
            in_gateway_vars = line == "[component.gateway.variables]";
        }
        match &options.gateway_internal_token {
            // A line of the gateway's composed `settings`.
            Some(token) if in_gateway_vars && line.starts_with("internal_token=") => {
                out.push_str(&format!("internal_token={token}\n"));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if let Some(token) = &options.gateway_internal_token {
        assert!(
            out.contains(&format!("\ninternal_token={token}\n")),
            "the gateway's token was not replaced"
        );
    }
    let path = dir.join("spin.toml");
    std::fs::write(&path, out).expect("manifest copy");
    path
}

/// The failure memory's store as `runtime-config.toml` has it: Spin's
/// SQLite key-value store in memory (counts that need not outlive the
/// process, kept off the disk).
const KV_IN_MEMORY: &str = "[key_value_store.default]\ntype = \"spin\"\n\n";

/// The `default` key-value store's section of a runtime configuration.
/// All in one `spin up`: in memory (or, with `kv_file`, Spin's default file
/// under the state directory), which every component of the app shares. In
/// the split layout (`shared`: its directory), one file for the four
/// processes, as a cluster's Redis is one store for every app: the
/// resolution cache's generations, which identity moves on, are the ones
/// the gateway reads.
fn key_value_section(kv_file: bool, shared: Option<&Path>) -> String {
    match (shared, kv_file) {
        (Some(dir), _) => format!(
            "[key_value_store.default]\ntype = \"spin\"\npath = {:?}\n\n",
            dir.join(SHARED_KEY_VALUE).display().to_string()
        ),
        (None, false) => KV_IN_MEMORY.to_owned(),
        (None, true) => String::new(),
    }
}

/// The split layout's store file, in [`shared_store_dir`].
const SHARED_KEY_VALUE: &str = "key_value.db";

/// Where a split app's shared store file lives: a new directory at each
/// start (a restart empties the store, as it empties the in-memory one of
/// the other layout), in memory where the machine has `/dev/shm`. On disk,
/// the store's fsync per write slowed every answer by enough for the
/// suite's 10 ms time tolerance to fail (1 of 15 runs of the held-lock
/// boundary test, against 0 of 15 on `/dev/shm`).
fn shared_store_dir() -> tempfile::TempDir {
    let mut builder = tempfile::Builder::new();
    builder.prefix("meridian-kv-");
    builder
        .tempdir_in("/dev/shm")
        .or_else(|_| builder.tempdir())
        .expect("a directory for the shared key-value store")
}

/// Writes `dir/runtime-config.toml` for the split layout run by hand
/// (`scripts/split.sh up`): each SQLite label a file in `dir`, and the
/// `default` key-value store one file there, `key_value.db`, for all four
/// processes, kept across restarts as the databases are.
pub fn write_split_runtime_config(dir: &Path) -> PathBuf {
    write_runtime_config_placing(dir, false, Some(dir), &[])
}

/// Writes `dir/runtime-config.toml`: each SQLite label a file in `dir`,
/// or in the directory `placed` gives for it, and the `default` key-value
/// store as [`key_value_section`] places it.
fn write_runtime_config_placing(
    dir: &Path,
    kv_file: bool,
    shared: Option<&Path>,
    placed: &[(&'static str, PathBuf)],
) -> PathBuf {
    let mut config = key_value_section(kv_file, shared);
    for label in ["identity", "community", "billing"] {
        let home = placed
            .iter()
            .find(|(l, _)| *l == label)
            .map_or(dir, |(_, d)| d.as_path());
        config.push_str(&sqlite_file(home, label));
    }
    let path = dir.join("runtime-config.toml");
    std::fs::write(&path, config).expect("runtime config");
    path
}

/// Whether the suite runs with one SQLite database for the whole app
/// (`MERIDIAN_DB=one`).
pub fn one_database() -> bool {
    std::env::var("MERIDIAN_DB").as_deref() == Ok("one") || profile() == Some(Profile::Cloud)
}

/// The environment variable that sets the Spin variable `name`.
fn spin_variable(name: &str) -> String {
    format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase())
}

/// The Wasm of `component` this run starts: the default build's, or the
/// profile's build of the four components.
fn component_wasm(component: &str) -> PathBuf {
    let target = repo_root().join("target");
    match profile() {
        Some(p) if SERVICES.contains(&component) => {
            target.join(p.build_dir()).join(format!("{component}.wasm"))
        }
        _ => target.join(format!("wasm32-wasip2/release/{component}.wasm")),
    }
}

/// `spin.toml`'s text as the run's hosted profile deploys it, if any
/// ([`crate::hosted::deployed`]: its build's Wasm, its databases, its
/// variables' defaults).
fn for_profile(text: String) -> String {
    let Some(profile) = profile() else {
        return text;
    };
    let target = repo_root().join("target");
    crate::hosted::deployed(
        &text,
        profile,
        &target.join("wasm32-wasip2/release").display().to_string(),
        &target.join(profile.build_dir()).display().to_string(),
    )
}

/// `spin.toml` with every service granted the one label instead of its own.
pub fn one_database_manifest(text: &str) -> String {
    let mut out = text.to_owned();
    for label in ["identity", "community", "billing"] {
        let own = format!("sqlite_databases = [\"{label}\"]");
        assert!(out.contains(&own), "spin.toml grants no {label}");
        out = out.replace(&own, &format!("sqlite_databases = [\"{ONE_DATABASE}\"]"));
    }
    out
}

/// The runtime configuration of `MERIDIAN_DB=one`: the one label a file in
/// `dir`.
fn write_one_database_config(dir: &Path, kv_file: bool, shared: Option<&Path>) -> PathBuf {
    let config = key_value_section(kv_file, shared) + sqlite_file(dir, ONE_DATABASE).as_str();
    let path = dir.join("runtime-config.toml");
    std::fs::write(&path, config).expect("runtime config");
    path
}

/// The runtime configuration of SQLite label `label`: a file in `dir`.
fn sqlite_file(dir: &Path, label: &str) -> String {
    let db = dir.join(format!("{label}.db"));
    format!(
        "[sqlite_database.{label}]\ntype = \"spin\"\npath = {:?}\n\n",
        db.display().to_string()
    )
}

/// One libSQL server (`MERIDIAN_DB=libsql`): the label it serves, where
/// it listens and keeps its data, and its process while it runs.
pub(crate) struct Sqld {
    label: &'static str,
    http: u16,
    grpc: u16,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Sqld {
    /// Starts `sqld` (from `$SQLD_BIN` or `PATH`) and waits until it listens.
    /// A server that exits at once because another process took one of its
    /// ports between `free_port` and its bind is started again on fresh
    /// ports (twice at most); any other early exit, or no listener within
    /// 20 s, fails with the tail of its log.
    fn start(&mut self) {
        for _ in 0..3 {
            match self.try_start() {
                Ok(()) => return,
                Err(log) if log.contains("Address already in use") => {
                    self.http = free_port();
                    self.grpc = free_port();
                }
                Err(log) => panic!("sqld for {} did not start:\n{log}", self.label),
            }
        }
        panic!("sqld for {}: its ports were taken three times", self.label);
    }

    /// One attempt: `Err` with the log's tail when the server exited
    /// before it listened.
    fn try_start(&mut self) -> Result<(), String> {
        let sqld =
            std::env::var_os("SQLD_BIN").map_or_else(|| PathBuf::from("sqld"), PathBuf::from);
        let log = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .expect("sqld log")
        };
        let mut command = Command::new(&sqld);
        command
            .arg("--db-path")
            .arg(&self.data)
            .arg("--http-listen-addr")
            .arg(format!("127.0.0.1:{}", self.http))
            .arg("--grpc-listen-addr")
            .arg(format!("127.0.0.1:{}", self.grpc))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log()))
            .stderr(Stdio::from(log()));
        command.process_group(0);
        let mut child = command.spawn().expect("start sqld (set SQLD_BIN)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.http)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("exited ({status}); its log:\n{}", self.log_tail()));
            }
            if started.elapsed() > Duration::from_secs(20) {
                stop(&mut child);
                panic!(
                    "sqld for {} did not listen within 20 s; its log:\n{}",
                    self.label,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
        Ok(())
    }

    /// The last 2,000 bytes of the server's log.
    fn log_tail(&self) -> String {
        let log = std::fs::read(&self.log).unwrap_or_default();
        let from = log.len().saturating_sub(2_000);
        String::from_utf8_lossy(&log[from..]).into_owned()
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }
}

/// `MERIDIAN_DB=libsql`: one libSQL server per SQLite label, its data
/// under the test's directory (or the one `placed` names for the label),
/// and the runtime configuration that points the labels at them over HTTP.
fn start_libsql(
    dir: &Path,
    kv_file: bool,
    shared: Option<&Path>,
    placed: &[(&'static str, PathBuf)],
) -> (PathBuf, Vec<Sqld>) {
    let mut config = key_value_section(kv_file, shared);
    let mut servers = Vec::new();
    for label in ["identity", "community", "billing"] {
        let home = placed
            .iter()
            .find(|(l, _)| *l == label)
            .map_or(dir, |(_, d)| d.as_path());
        let mut server = Sqld {
            label,
            http: free_port(),
            grpc: free_port(),
            data: home.join(format!("sqld-{label}")),
            log: dir.join(format!("sqld-{label}.log")),
            child: None,
        };
        server.start();
        config.push_str(&format!(
            "[sqlite_database.{label}]\ntype = \"libsql\"\nurl = \"http://127.0.0.1:{}\"\ntoken = \"none\"\n\n",
            server.http
        ));
        servers.push(server);
    }
    let path = dir.join("runtime-config.toml");
    std::fs::write(&path, config).expect("runtime config");
    (path, servers)
}

/// The entries of `dir` (none when it cannot be read).
fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

fn log_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .expect("log file")
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100, Linux's
/// value nearly everywhere, when it cannot be asked).
fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_variables_are_every_default_of_the_manifest_and_the_tests_values_win() {
        let manifest = std::fs::read_to_string(repo_root().join("spin.toml")).unwrap();
        let defaults = manifest_defaults(&manifest);
        let names: Vec<&str> = defaults.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"request_budget_ms") && names.contains(&"resolution_cache"));
        // The tokens have no default: they stay with the environment.
        assert!(!names.contains(&"internal_token") && !names.contains(&"admin_token"));
        assert!(defaults.contains(&("tenant_rate_limit".to_owned(), "200/2s".to_owned())));
        let provider = SpinOptions::default()
            .variable("tenant_rate_limit", "off")
            .static_provider();
        assert!(provider.starts_with("[[variables_provider]]\ntype = \"static\"\n"));
        assert!(provider.contains("tenant_rate_limit = \"off\""));
        assert!(!provider.contains("200/2s"));
    }
}
