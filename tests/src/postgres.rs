//! `MERIDIAN_DB=postgres`: every app's services on databases of their own
//! on the PostgreSQL server `scripts/postgres.sh` started, whose address
//! (`postgres://user:password@127.0.0.1:port`) is `MERIDIAN_POSTGRES`.
//! Each app gets three fresh databases, kept across a restart.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The server's address when the suite runs on PostgreSQL.
pub fn server() -> Option<String> {
    if std::env::var("MERIDIAN_DB").as_deref() != Ok("postgres") {
        return None;
    }
    let address = std::env::var("MERIDIAN_POSTGRES")
        .expect("MERIDIAN_DB=postgres needs MERIDIAN_POSTGRES (scripts/postgres.sh sets it)");
    Some(address.trim_end_matches('/').to_owned())
}

/// One app's three databases on the server.
#[derive(Debug, Clone)]
pub struct PgDatabases {
    server: String,
    /// The database of each service, by service.
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
        let names: Vec<_> = ["identity", "community", "billing"]
            .into_iter()
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

    /// The address of `service`'s database.
    pub fn address(&self, service: &str) -> String {
        let name = self
            .names
            .iter()
            .find(|(s, _)| *s == service)
            .map(|(_, n)| n.as_str())
            .expect("a service");
        format!("{}/{name}", self.server)
    }

    /// The Spin variables that put the services on these databases.
    pub fn variables(&self) -> Vec<(&'static str, String)> {
        vec![
            ("postgres_host", self.host()),
            ("identity_postgres", self.address("identity")),
            ("community_postgres", self.address("community")),
            ("billing_postgres", self.address("billing")),
        ]
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
        let out = Command::new("psql")
            .args([address.as_str(), "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
            .output()
            .expect("psql (Debian's postgresql-client)");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
