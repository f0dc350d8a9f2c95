//! A server a chosen round trip away, on loopback: a TCP proxy that holds
//! every chunk of bytes for half the round-trip time in each direction
//! before passing it on (the kernel here has no `netem`). Order is kept and
//! throughput is not: a chunk waits its own half-RTT from when it was read,
//! not behind the one before it, as on a long link with room to spare. It
//! counts the chunks clients send, and of those the round trips a client
//! waits for (PostgreSQL's protocol: a chunk of only `Close`, `Sync` and
//! `Terminate` messages — a dropped statement's close — is not waited for;
//! every other chunk — a prepare, an execute, the pool's clean-up — is).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The proxy: listens on a free loopback port and forwards to `upstream`;
/// stops accepting when dropped (connections under way run to their end).
pub struct Distance {
    port: u16,
    stop: Arc<AtomicBool>,
    sends: Arc<AtomicUsize>,
    waited: Arc<AtomicUsize>,
    checkouts: Arc<AtomicUsize>,
}

impl Distance {
    /// Puts `upstream` (`host:port`) `rtt` away.
    pub fn start(upstream: &str, rtt: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let sends = Arc::new(AtomicUsize::new(0));
        let waited = Arc::new(AtomicUsize::new(0));
        let checkouts = Arc::new(AtomicUsize::new(0));
        let (upstream, half) = (upstream.to_owned(), rtt / 2);
        {
            let (stop, sends) = (stop.clone(), sends.clone());
            let (waited, checkouts) = (waited.clone(), checkouts.clone());
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(&upstream) else {
                        continue;
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let counts = [sends.clone(), waited.clone(), checkouts.clone()];
                    pipe(&client, &server, half, Some(counts));
                    pipe(&server, &client, half, None);
                }
            });
        }
        Self {
            port,
            stop,
            sends,
            waited,
            checkouts,
        }
    }

    /// Its address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The chunks clients sent to the server so far.
    pub fn sends(&self) -> usize {
        self.sends.load(Ordering::SeqCst)
    }

    /// The round trips clients waited for so far: their sends less those
    /// that only close a statement.
    pub fn round_trips(&self) -> usize {
        self.waited.load(Ordering::SeqCst)
    }

    /// The connections checked out of a pool so far: Spin's pool cleans
    /// a connection at each checkout with one simple query (`Q`: `CLOSE
    /// ALL; … DISCARD SEQUENCES`), and the store sends none of its own.
    pub fn checkouts(&self) -> usize {
        self.checkouts.load(Ordering::SeqCst)
    }
}

impl Drop for Distance {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.addr());
    }
}

/// Forwards what `from` sends to `to`, each chunk `delay` after it was
/// read: one thread reads and stamps, another waits out each stamp and
/// writes, so chunks in flight overlap. Counts the chunks, and those
/// waited for ([`waited_for`]), and the checkouts' clean-ups, in `counts`.
type Counts = [Arc<AtomicUsize>; 3];

fn pipe(from: &TcpStream, to: &TcpStream, delay: Duration, counts: Option<Counts>) {
    let (Ok(mut reader), Ok(mut writer)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = buffer.get(..n).unwrap_or_default().to_vec();
                    if let Some([sends, waited, checkouts]) = &counts {
                        sends.fetch_add(1, Ordering::SeqCst);
                        if waited_for(&chunk) {
                            waited.fetch_add(1, Ordering::SeqCst);
                        }
                        if chunk.first() == Some(&b'Q') {
                            checkouts.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    if chunks.send((Instant::now() + delay, chunk)).is_err() {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        for (at, chunk) in due {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            if writer.write_all(&chunk).is_err() {
                break;
            }
        }
        // The sender closed: so does this direction, after what it sent.
        let _ = writer.shutdown(Shutdown::Write);
    });
}

/// Whether a client waits for the answer to `chunk`: anything but a run
/// of whole `Close` (`C`), `Sync` (`S`) and `Terminate` (`X`) messages,
/// each a type byte and a 4-byte length that counts itself.
fn waited_for(chunk: &[u8]) -> bool {
    let mut rest = chunk;
    while let [kind, a, b, c, d, ..] = rest {
        if !matches!(kind, b'C' | b'S' | b'X') {
            return true;
        }
        let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
        match rest.get(1 + len..) {
            Some(next) => rest = next,
            None => return true,
        }
    }
    !rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback: each read written straight back.
    fn echo() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut buffer = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buffer) {
                        if n == 0 || stream.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn each_round_trip_takes_the_chosen_time_and_is_counted() {
        let distance = Distance::start(&echo(), Duration::from_millis(40));
        let mut client = TcpStream::connect(distance.addr()).unwrap();
        client.set_nodelay(true).unwrap();
        let mut reply = [0u8; 5];
        for round in 0..3 {
            let started = Instant::now();
            client.write_all(b"hello").unwrap();
            client.read_exact(&mut reply).unwrap();
            let took = started.elapsed();
            assert_eq!(&reply, b"hello");
            assert!(
                took >= Duration::from_millis(40) && took < Duration::from_millis(140),
                "round {round}: {took:?}"
            );
        }
        assert_eq!(distance.sends(), 3);
        assert_eq!(
            distance.round_trips(),
            3,
            "'h' is no message that goes unanswered"
        );
    }

    #[test]
    fn a_statements_close_is_sent_but_not_waited_for() {
        let message = |kind: u8, body: &[u8]| {
            let mut m = vec![kind];
            m.extend(u32::try_from(body.len() + 4).unwrap().to_be_bytes());
            m.extend(body);
            m
        };
        let close = [message(b'C', b"Ss1\0"), message(b'S', b"")].concat();
        let parse = [message(b'P', b"s1\0SELECT 1\0\0\0"), message(b'S', b"")].concat();
        let clean_up = message(b'Q', b"RESET ALL\0");
        assert!(!waited_for(&close));
        assert!(waited_for(&parse));
        assert!(waited_for(&clean_up));
        assert!(
            waited_for(&[close.clone(), parse].concat()),
            "a close sent with a prepare"
        );
        assert!(waited_for(&close[..3]), "a message cut short is counted");
    }

    #[test]
    fn chunks_in_flight_overlap_rather_than_queue() {
        // Ten sends without waiting for replies: all arrive about one RTT
        // after the first was sent, not ten.
        let distance = Distance::start(&echo(), Duration::from_millis(60));
        let mut client = TcpStream::connect(distance.addr()).unwrap();
        client.set_nodelay(true).unwrap();
        let started = Instant::now();
        for _ in 0..10 {
            client.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut reply = [0u8; 10];
        client.read_exact(&mut reply).unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_millis(250), "{took:?}");
        assert!(took >= Duration::from_millis(60), "{took:?}");
    }
}
