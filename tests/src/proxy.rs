//! HAProxy in front of an app, as `deploy/haproxy/haproxy.cfg` configures
//! it for a node: a cap on the requests in progress at Spin, a queue with
//! a timeout, the arrival stamped, and its own 503 for what waited too
//! long. Started from Debian's `haproxy` (the test command installs it),
//! in the foreground, on a free loopback port; stopped when dropped.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::repo_root;

/// The proxy's settings.
#[derive(Debug, Clone, Copy)]
pub struct ProxySettings {
    /// Requests in progress at Spin at once.
    pub cap: u32,
    /// The longest a request waits in the queue before the proxy's 503.
    pub queue: Duration,
    /// The most requests waiting; one more gets the 503 at once.
    pub max_queue: u32,
}

impl ProxySettings {
    /// The settings for requests with `budget`, from how the app serves
    /// at `cap` requests at once (`p50` and `p99` of a served request):
    /// the queue leaves a request let through at its end the p99 and 10 ms
    /// for the answer's way back, and holds as many as the cap serves in
    /// that wait — one more could only be served late, so it is refused
    /// at once rather than after waiting the queue out.
    pub fn derived(budget: Duration, cap: u32, p50: Duration, p99: Duration) -> Self {
        let queue = budget
            .saturating_sub(p99 + Duration::from_millis(10))
            .max(Duration::from_millis(5));
        let per_slot = queue.as_secs_f64() / p50.as_secs_f64().max(1e-3);
        Self {
            cap,
            queue,
            max_queue: ((f64::from(cap) * per_slot) as u32).max(1),
        }
    }
}

/// One running HAProxy.
pub struct Proxy {
    child: Child,
    port: u16,
    /// What it was started with.
    pub settings: ProxySettings,
}

/// Whether `haproxy` is installed.
pub fn available() -> bool {
    Command::new("haproxy")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Proxy {
    /// HAProxy in front of `upstream` (`http://127.0.0.1:port`).
    pub fn start(upstream: &str, settings: ProxySettings) -> Self {
        Self::start_with(upstream, settings, &[])
    }

    /// The same, with more of the configuration's environment (e.g.
    /// `MERIDIAN_PROXY_CONNECTIONS`, `MERIDIAN_PROXY_HEAD_MS`).
    pub fn start_with(upstream: &str, settings: ProxySettings, env: &[(&str, String)]) -> Self {
        let port = crate::spin::free_port();
        let dir = repo_root().join("deploy/haproxy");
        let child = Command::new("haproxy")
            .arg("-f")
            .arg(dir.join("haproxy.cfg"))
            .arg("-db")
            .env("MERIDIAN_PROXY_BIND", format!("127.0.0.1:{port}"))
            .env("MERIDIAN_SPIN", upstream.trim_start_matches("http://"))
            .env("MERIDIAN_PROXY_CAP", settings.cap.to_string())
            .env(
                "MERIDIAN_PROXY_QUEUE_MS",
                settings.queue.as_millis().max(1).to_string(),
            )
            .env("MERIDIAN_PROXY_MAX_QUEUE", settings.max_queue.to_string())
            .env("MERIDIAN_PROXY_ERRORS", &dir)
            .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("haproxy (Debian's package; the test command installs it)");
        let mut proxy = Self {
            child,
            port,
            settings,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                panic!("haproxy exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "haproxy not listening after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
