//! Storage faults on a real `spin up`: for each service, a keyed write when
//! its database's filesystem is full, when the file is read-only (an
//! immutable file: the suite runs as root, which file modes do not bind),
//! and when the file is not a database. Each answer is a retryable 503
//! `storage_unavailable` problem with a `failure` line naming the fault,
//! nothing is half-written, the other services keep working, and once the
//! fault is cleared — without a restart — the same key writes once.
//!
//! The filesystem is a small tmpfs mounted for the test (the suite runs as
//! root), filled by a file beside the database. With `MERIDIAN_DB=libsql`
//! the databases are libSQL servers, and the equivalent faults are tested
//! instead: a server that is down, and a server whose disk is full.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use meridian_e2e::api::{service_write, written_by, TenantClient};
use meridian_e2e::{run_ok, settled, Reply, SpinApp, SpinOptions};

const SERVICES: [&str; 3] = ["identity", "community", "billing"];

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().expect("mount point");
        run_ok(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(dir.path()),
            "the full-disk test mounts a small tmpfs and needs root (CAP_SYS_ADMIN)",
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A fault made on one database file, undone by [`Injected::clear`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The filesystem has no room left.
    Full,
    /// The file is immutable (`chattr +i`): it opens read-only.
    ReadOnly,
    /// The file's bytes are not a database.
    NotADatabase,
    /// The libSQL server is down.
    ServerDown,
}

impl Fault {
    /// The `what` of the `failure` line `service` logs.
    fn failure(self, service: &str) -> &'static str {
        match self {
            // A libSQL server reports its full disk as SQLITE_IOERR: its
            // write-ahead log's write failed. So does billing's own file,
            // which writes ahead too (migration 0004): with no connection
            // open, a request's connection first grows the `-shm` index,
            // and SQLite reports that failed growth as an I/O error.
            Fault::Full if !sqlite_files() || service == "billing" => {
                "storage unavailable: i/o error"
            }
            Fault::Full => "storage unavailable: disk full",
            Fault::ReadOnly => "storage unavailable: read-only",
            Fault::NotADatabase => "storage unavailable: not a database",
            Fault::ServerDown => "storage unavailable: unreachable",
        }
    }

    /// Whether the database cannot even be read.
    fn unreadable(self) -> bool {
        matches!(self, Fault::NotADatabase | Fault::ServerDown)
    }

    /// Makes the fault on `service`'s database, whose file (or, for a
    /// libSQL server, data directory) is in `dir`.
    fn inject(self, app: &mut SpinApp, service: &str, dir: &Path) -> Injected {
        let db = if sqlite_files() {
            dir.join(format!("{service}.db"))
        } else {
            dir.join(format!("sqld-{service}"))
        };
        let mut injected = Injected {
            fault: self,
            service: service.to_owned(),
            locked: Vec::new(),
            filler: None,
            saved: None,
        };
        match self {
            Fault::Full => {
                // Billing's file writes ahead: while a connection is open
                // (an event's delivery after an answer), its `-wal` file
                // stays, and a commit can fit in the room it already has.
                // Once the last connection closes, SQLite removes it and the
                // next request needs new room for its index.
                let wal = db.with_extension("db-wal");
                settled("no write-ahead log open", 1, || usize::from(!wal.exists()));
                let filler = dir.join("filler");
                let mut file = std::fs::File::create(&filler).expect("filler");
                let chunk = vec![0u8; 64 * 1024];
                // Until the filesystem refuses: then it is full.
                while file
                    .write_all(&chunk)
                    .and_then(|()| file.sync_all())
                    .is_ok()
                {}
                injected.filler = Some(filler);
            }
            Fault::ReadOnly => {
                if sqlite_files() {
                    // Not in the middle of a write (billing delivers an
                    // invoice's event to community after its answer): a
                    // file made immutable beside a hot rollback journal
                    // cannot be read at all, since every reader must roll
                    // the journal back first — another fault than the one
                    // this injects (seen once, in the split layout).
                    let journal = dir.join(format!("{service}.db-journal"));
                    settled("no write in progress", 1, || usize::from(!journal.exists()));
                }
                for file in data_files(&db) {
                    chattr("+i", &file);
                    injected.locked.push(file);
                }
            }
            Fault::NotADatabase => {
                let bytes = std::fs::read(&db).expect("the database file");
                std::fs::write(&db, vec![b'x'; 8192]).expect("overwrite the database");
                injected.saved = Some((db, bytes));
            }
            Fault::ServerDown => app.stop_database_server(service),
        }
        injected
    }
}

fn chattr(flag: &str, path: &Path) {
    run_ok(
        Command::new("chattr").arg(flag).arg(path),
        &format!("chattr {flag} {}", path.display()),
    );
}

struct Injected {
    fault: Fault,
    service: String,
    /// The files made immutable.
    locked: Vec<PathBuf>,
    filler: Option<PathBuf>,
    saved: Option<(PathBuf, Vec<u8>)>,
}

impl Injected {
    fn clear(mut self, app: &mut SpinApp) {
        if self.fault == Fault::ServerDown {
            app.start_database_server(&self.service);
        }
        self.undo();
    }

    fn undo(&mut self) {
        if let Some(filler) = self.filler.take() {
            let _ = std::fs::remove_file(filler);
        }
        for file in std::mem::take(&mut self.locked) {
            chattr("-i", &file);
        }
        if let Some((db, bytes)) = self.saved.take() {
            std::fs::write(db, bytes).expect("restore the database");
        }
    }
}

impl Drop for Injected {
    fn drop(&mut self) {
        // A failed assertion must not leave an immutable file behind (the
        // test's directory could not be removed).
        for file in &self.locked {
            let _ = Command::new("chattr").arg("-i").arg(file).status();
        }
    }
}

/// The files that hold a database's pages: Spin's SQLite file itself, or
/// under a libSQL server's data directory its database file and its
/// write-ahead log (the shared-memory index stays writable: readers need it).
fn data_files(db: &Path) -> Vec<PathBuf> {
    if db.is_file() {
        return vec![db.to_owned()];
    }
    let mut found = Vec::new();
    let mut dirs = vec![db.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("libSQL data directory")
            .flatten()
        {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if name.starts_with("data") && !name.ends_with("-shm") {
                found.push(path);
            }
        }
    }
    assert!(!found.is_empty(), "no database file under {}", db.display());
    found
}

/// What each service's keyed write is, and how many of its items exist.
struct Writes<'t> {
    acme: &'t TenantClient,
    resident: String,
}

impl Writes<'_> {
    /// A keyed write that only `service` stores ([`service_write`]).
    fn write(&self, service: &str, key: &str) -> Reply {
        service_write(self.acme, &self.resident, service, key)
    }

    /// How many of `service`'s items were written with `key`.
    fn written(&self, service: &str, key: &str) -> usize {
        written_by(self.acme, service, key)
    }
}

fn failures(app: &SpinApp, service: &str, what: &str) -> usize {
    app.log_lines(service)
        .iter()
        .filter(|l| l["event"] == "failure" && l["what"] == what)
        .count()
}

/// Runs `fault` on each service's database in turn, in one app whose
/// databases live in `dirs` (label → directory).
fn each_service_under(fault: Fault, dirs: &[(&'static str, PathBuf)]) {
    let options = dirs.iter().fold(SpinOptions::default(), |o, (label, dir)| {
        o.database_in(label, dir)
    });
    let mut app = SpinApp::start_with(options);
    let acme = app.tenant("acme");
    let writes = Writes {
        resident: acme.resident("Ada"),
        acme: &acme,
    };
    for (service, dir) in dirs {
        let key = format!("{fault:?}-{service}").to_ascii_lowercase();
        let injected = fault.inject(&mut app, service, dir);
        let what = fault.failure(service);
        let logged_before = failures(&app, service, what);

        let refused = writes.write(service, &key);
        let problem = refused.assert_problem(503, "storage_unavailable");
        assert_eq!(problem["retryable"], true, "{}", refused.body);
        assert!(
            failures(&app, service, what) > logged_before,
            "{service} logged no `{what}` failure line:\n{}",
            app.logs()
        );
        // What was tried and answered, for docs/reliability.md (`--nocapture`).
        let cause = app
            .log_lines(service)
            .iter()
            .rev()
            .find(|l| l["what"] == what)
            .and_then(|l| l["cause"].as_str().map(str::to_owned))
            .unwrap_or_default();
        println!(
            "{service} {fault:?}: {} {}; logged `{what}`: {cause}",
            refused.status, problem["code"]
        );

        // The other services store their own writes meanwhile. Every
        // request is resolved by identity, so an identity that cannot even
        // read refuses them all; its readiness still names only itself.
        if !(*service == "identity" && fault.unreadable()) {
            for other in SERVICES.iter().filter(|o| *o != service) {
                let r = writes.write(other, &format!("{key}-beside-{other}"));
                if *other == "billing" && *service == "community" && fault.unreadable() {
                    // An invoice needs community to confirm its resident:
                    // billing says it could not, and still serves its own.
                    r.assert_problem(502, "upstream_unavailable");
                    assert_eq!(acme.get("/invoices").send().status, 200);
                    continue;
                }
                assert_eq!(
                    r.status, 201,
                    "{other} beside a {fault:?} {service}: {}",
                    r.body
                );
            }
        }
        let ready = app.client().get("/readyz");
        if fault.unreadable() {
            // Readiness names the service that cannot read, and only it.
            let detail = ready.assert_problem(503, "upstream_unavailable")["detail"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(detail.contains(service), "{detail}");
            for other in SERVICES.iter().filter(|o| *o != service) {
                assert!(!detail.contains(other), "{other} is not ready: {detail}");
            }
        }

        injected.clear(&mut app);
        let first = writes.write(service, &key);
        assert_eq!(
            first.status, 201,
            "{service} after the {fault:?} fault cleared: {}",
            first.body
        );
        assert_eq!(first.header("idempotent-replayed"), None);
        let replay = writes.write(service, &key);
        assert_eq!(
            (replay.status, replay.header("idempotent-replayed")),
            (201, Some("true")),
            "{}",
            replay.body
        );
        assert_eq!(
            writes.written(service, &key),
            1,
            "{service}: the key wrote once"
        );
        assert_eq!(app.client().get("/readyz").status, 200);
    }
}

fn plain_dirs(root: &Path) -> Vec<(&'static str, PathBuf)> {
    SERVICES
        .iter()
        .map(|s| {
            let dir = root.join(s);
            std::fs::create_dir_all(&dir).expect("database directory");
            (*s, dir)
        })
        .collect()
}

fn sqlite_files() -> bool {
    std::env::var("MERIDIAN_DB").as_deref() != Ok("libsql")
}

#[test]
fn a_write_on_a_full_disk_is_a_retryable_503_and_writes_once_when_room_is_made() {
    // Each database (or libSQL server's data) on a filesystem of its own.
    let mounts: Vec<Tmpfs> = SERVICES.iter().map(|_| Tmpfs::mount("8m")).collect();
    let dirs: Vec<_> = SERVICES
        .iter()
        .zip(&mounts)
        .map(|(s, m)| (*s, m.path().to_owned()))
        .collect();
    each_service_under(Fault::Full, &dirs);
}

#[test]
fn a_database_that_cannot_be_reached_or_read_is_a_retryable_503_and_service_resumes_when_it_is_back(
) {
    let root = tempfile::tempdir().unwrap();
    // The libSQL layout has no file of Spin's to replace: its server is
    // stopped instead, and started again on the same data.
    let fault = if sqlite_files() {
        Fault::NotADatabase
    } else {
        Fault::ServerDown
    };
    each_service_under(fault, &plain_dirs(root.path()));
}

#[test]
fn a_write_to_a_read_only_database_is_a_retryable_503_and_writes_once_when_it_is_writable_again() {
    let root = tempfile::tempdir().unwrap();
    each_service_under(Fault::ReadOnly, &plain_dirs(root.path()));
}
