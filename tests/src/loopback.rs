//! An HTTP server on a free 127.0.0.1 port that hands each request to a
//! handler on its own thread, stopped when dropped: what the stand-ins and
//! the OTLP receiver are built on.

use std::sync::Arc;
use std::thread::JoinHandle;

/// The running server.
pub struct Loopback {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl Loopback {
    /// Serves every request with `handle`, one thread per request so a
    /// handler that hangs blocks nothing else.
    pub fn serve(handle: impl Fn(tiny_http::Request) + Send + Sync + 'static) -> Self {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server.server_addr().to_ip().expect("ip address").port();
        let handle = Arc::new(handle);
        let thread = {
            let server = server.clone();
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let handle = handle.clone();
                    std::thread::spawn(move || handle(request));
                }
            })
        };
        Self {
            server,
            thread: Some(thread),
            port,
        }
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
