//! `MERIDIAN_DB=postgres`: every app's services on databases of their own
//! on the PostgreSQL server `scripts/postgres.sh` started, whose address
//! (`postgres://user:password@127.0.0.1:port`) is `MERIDIAN_POSTGRES`.
//! Each app gets three fresh databases, kept across a restart.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The counts' table as the components create it on first use
/// (meridian_platform::counts::TableCounters).
const COUNTS_TABLE_DDL: &str = "CREATE TABLE IF NOT EXISTS meridian_counts \
     (name TEXT PRIMARY KEY, number BIGINT NOT NULL DEFAULT 0, bytes BYTEA)";

/// The server's address when the suite runs on PostgreSQL: a round trip
/// of `MERIDIAN_PG_RTT_MS` milliseconds away when that is set (behind this
/// process's [`crate::distance::Distance`] proxy).
pub fn server() -> Option<String> {
    if std::env::var("MERIDIAN_DB").as_deref() != Ok("postgres") {
        return None;
    }
    let address = std::env::var("MERIDIAN_POSTGRES")
        .expect("MERIDIAN_DB=postgres needs MERIDIAN_POSTGRES (scripts/postgres.sh sets it)");
    let address = address.trim_end_matches('/');
    let rtt = std::env::var("MERIDIAN_PG_RTT_MS").ok().map(|ms| {
        ms.parse::<u64>()
            .expect("MERIDIAN_PG_RTT_MS: whole milliseconds")
    });
    let (Some(rtt), Some((credentials, host))) = (rtt, address.rsplit_once('@')) else {
        return Some(address.to_owned());
    };
    static DISTANCE: std::sync::OnceLock<crate::distance::Distance> = std::sync::OnceLock::new();
    let proxy = DISTANCE.get_or_init(|| {
        crate::distance::Distance::start(host, std::time::Duration::from_millis(rtt))
    });
    Some(format!("{credentials}@{}", proxy.addr()))
}

/// One app's three databases on the server, and in the Akamai profile a
/// fourth for the counts (`counts_postgres`).
#[derive(Debug, Clone)]
pub struct PgDatabases {
    server: String,
    /// The database of each service (and `counts`), by service.
    names: Vec<(&'static str, String)>,
}

impl PgDatabases {
    /// Creates a fresh database for each service, in the `C` locale so
    /// that text sorts by bytes, as SQLite sorts it.
    pub fn create(server: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let run = format!(
            "m{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let counts = crate::profile::profile() == Some(crate::profile::Profile::Akamai);
        let names: Vec<_> = ["identity", "community", "billing"]
            .into_iter()
            .chain(counts.then_some("counts"))
            .map(|service| (service, format!("{run}_{service}")))
            .collect();
        let dbs = Self {
            server: server.to_owned(),
            names,
        };
        for (_, name) in &dbs.names {
            dbs.psql(
                "postgres",
                &format!("CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'"),
            );
        }
        dbs
    }

    /// The name of `service`'s database on the server.
    pub fn database(&self, service: &str) -> &str {
        self.names
            .iter()
            .find(|(s, _)| *s == service)
            .map(|(_, n)| n.as_str())
            .expect("a service")
    }

    /// The address of `service`'s database.
    pub fn address(&self, service: &str) -> String {
        format!("{}/{}", self.server, self.database(service))
    }

    /// The Spin variables that put the services (and the counts) on these
    /// databases.
    pub fn variables(&self) -> Vec<(&'static str, String)> {
        let mut variables = vec![
            ("postgres_host", self.host()),
            ("identity_postgres", self.address("identity")),
            ("community_postgres", self.address("community")),
            ("billing_postgres", self.address("billing")),
        ];
        if self.has_counts() {
            variables.push(("counts_postgres", self.address("counts")));
        }
        variables
    }

    /// Whether the app's counts are on this server (`counts_postgres`).
    pub fn has_counts(&self) -> bool {
        self.names.iter().any(|(s, _)| *s == "counts")
    }

    /// The databases that may hold counts: the counts' own, then billing's,
    /// which keeps its failure memory in its own database (docs/storage.md,
    /// "Counts in PostgreSQL").
    const COUNTED: [&'static str; 2] = ["counts", "billing"];

    /// Every key in the counts' tables (none before a first write).
    pub fn count_keys(&self) -> Vec<String> {
        Self::COUNTED
            .iter()
            .flat_map(|database| {
                self.psql(
                    database,
                    &format!("{COUNTS_TABLE_DDL}; SELECT name FROM meridian_counts"),
                )
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The value under `key` in the counts' tables: an entry's bytes, or a
    /// count as a key-value store keeps an increment (8 little-endian
    /// bytes).
    pub fn count_value(&self, key: &str) -> Option<Vec<u8>> {
        let key = key.replace('\'', "''");
        let out = Self::COUNTED.iter().find_map(|database| {
            let out = self.psql(
                database,
                &format!(
                    "{COUNTS_TABLE_DDL}; SELECT coalesce(encode(bytes, 'hex'), '') || '|' || number \
                     FROM meridian_counts WHERE name = '{key}'"
                ),
            );
            (!out.trim().is_empty()).then_some(out)
        })?;
        let (hex, number) = out.trim().split_once('|')?;
        if hex.is_empty() {
            return Some(number.parse::<i64>().ok()?.to_le_bytes().to_vec());
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect()
    }

    /// Writes `value` under `key` in the counts' table, as anything that
    /// can reach the database could.
    pub fn put_count_entry(&self, key: &str, value: &[u8]) {
        let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
        let key = key.replace('\'', "''");
        self.psql(
            "counts",
            &format!(
                "{COUNTS_TABLE_DDL}; INSERT INTO meridian_counts (name, bytes) \
                 VALUES ('{key}', decode('{hex}', 'hex')) \
                 ON CONFLICT (name) DO UPDATE SET bytes = excluded.bytes"
            ),
        );
    }

    /// Deletes every entry of the counts' table whose name starts with
    /// `prefix`.
    pub fn delete_counts(&self, prefix: &str) {
        let prefix = prefix.replace('\'', "''");
        self.psql(
            "counts",
            &format!(
                "{COUNTS_TABLE_DDL}; DELETE FROM meridian_counts WHERE starts_with(name, '{prefix}')"
            ),
        );
    }

    /// The server as `allowed_outbound_hosts` names it: `postgres://host:port`.
    pub fn host(&self) -> String {
        let host = self
            .server
            .rsplit_once('@')
            .map_or(self.server.as_str(), |(_, host)| host);
        format!("postgres://{host}")
    }

    /// Runs `sql` with `psql` on `database` (a service, or `postgres`) and
    /// returns what it printed, one unaligned row per line.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let address = match database {
            "postgres" => format!("{}/postgres", self.server),
            service => self.address(service),
        };
        crate::run_ok(
            Command::new("psql").args([
                address.as_str(),
                "-v",
                "ON_ERROR_STOP=1",
                "-qAt",
                "-c",
                sql,
            ]),
            &format!("psql (Debian's postgresql-client) {sql}"),
        )
    }
}

/// The server `rtt` away: a delaying proxy in front of it that counts what
/// crosses it ([`crate::distance::Distance`]), and the server's address
/// through the proxy, for [`PgDatabases::create`]. `None` without a server.
pub fn server_at(rtt: std::time::Duration) -> Option<(crate::distance::Distance, String)> {
    let server = server()?;
    let (credentials, host) = server.rsplit_once('@')?;
    let proxy = crate::distance::Distance::start(host, rtt);
    let through = format!("{credentials}@{}", proxy.addr());
    Some((proxy, through))
}

/// A tenant's page and keyed invoices on an app whose every database is
/// behind `proxy`, counted as docs/storage.md's "Round trips" states them.
pub struct RoundTrips {
    /// Waited round trips of each page, the work after its answer included.
    pub pages: Vec<usize>,
    /// Connections checked out for each page.
    pub page_checkouts: Vec<usize>,
    /// Round trips of each keyed invoice as its answer arrives: the work
    /// after it may have begun, so the smallest is the bound before it.
    pub answered: Vec<usize>,
    /// Round trips of each keyed invoice once everything has settled.
    pub in_all: Vec<usize>,
    /// Connections checked out for each keyed invoice.
    pub write_checkouts: Vec<usize>,
}

impl std::fmt::Display for RoundTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "page: {:?} round trips, {:?} checkouts; keyed invoice: {:?} as answered, \
             {:?} in all, {:?} checkouts",
            self.pages, self.page_checkouts, self.answered, self.in_all, self.write_checkouts
        )
    }
}

/// `samples` pages and as many keyed invoices of one tenant on `app`,
/// each once the one before has settled, with a warm pool and the caller's
/// resolution remembered (three of each first), counted by `proxy`.
pub fn count_round_trips(
    app: &crate::SpinApp,
    proxy: &crate::distance::Distance,
    samples: usize,
) -> RoundTrips {
    let acme = app.tenant("acme");
    let resident = acme.resident("Ada");
    let invoice = |key: &str| {
        acme.post("/invoices")
            .key(key)
            .json(&serde_json::json!({
                "resident_id": resident, "amount_cents": 1_000, "currency": "EUR",
                "description": "dues", "due_date": "2026-12-31"
            }))
            .status
    };
    for n in 0..3 {
        acme.get("/residents?limit=20").send();
        assert_eq!(invoice(&format!("warm-{n}")), 201);
    }
    let settled = || crate::settled("round trips", 0, || proxy.round_trips());
    let mut counted = RoundTrips {
        pages: Vec::new(),
        page_checkouts: Vec::new(),
        answered: Vec::new(),
        in_all: Vec::new(),
        write_checkouts: Vec::new(),
    };
    for _ in 0..samples {
        let (before, checked_out) = (settled(), proxy.checkouts());
        assert_eq!(acme.get("/residents?limit=20").send().status, 200);
        counted.pages.push(settled() - before);
        counted.page_checkouts.push(proxy.checkouts() - checked_out);
    }
    for n in 0..samples {
        let (before, checked_out) = (settled(), proxy.checkouts());
        assert_eq!(invoice(&format!("counted-{n}")), 201);
        counted.answered.push(proxy.round_trips() - before);
        counted.in_all.push(settled() - before);
        counted
            .write_checkouts
            .push(proxy.checkouts() - checked_out);
    }
    counted
}
