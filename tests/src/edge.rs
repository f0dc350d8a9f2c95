//! A stand-in for the edge of a platform without service chaining
//! (Fermyon Cloud): the app's public origin, in front of its `spin up`.
//! Every internal call of the cloud deployment leaves the app, crosses
//! this edge and comes back in; the edge forwards each request to the app
//! unchanged, counts what it carried by service (`/_meridian/<service>/...`)
//! and, where a test asks, answers a request itself as an edge that
//! failed would (an HTML `502`, an empty `503`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::loopback::{Loopback, LoopbackReply, Request};
use crate::Client;

/// An answer of the edge's own, for the requests a test picks.
type OwnAnswer = dyn Fn(&Request) -> Option<LoopbackReply> + Send + Sync;

/// The edge: start it, start the app with `public_origin` at [`Edge::url`],
/// then [`Edge::forward_to`] the app.
pub struct Edge {
    server: Loopback,
    app: Arc<RwLock<String>>,
    carried: Arc<Mutex<Vec<String>>>,
}

impl Edge {
    /// An edge that forwards everything.
    pub fn start() -> Self {
        Self::answering(|_| None)
    }

    /// An edge that answers what `own` answers itself, and forwards the rest.
    pub fn answering(
        own: impl Fn(&Request) -> Option<LoopbackReply> + Send + Sync + 'static,
    ) -> Self {
        let own: Arc<OwnAnswer> = Arc::new(own);
        let app = Arc::new(RwLock::new(String::new()));
        let carried = Arc::new(Mutex::new(Vec::new()));
        let server = {
            let (app, carried) = (app.clone(), carried.clone());
            Loopback::serve(move |request| {
                let target = request
                    .uri()
                    .path_and_query()
                    .map_or("/", |pq| pq.as_str())
                    .to_owned();
                if let Ok(mut carried) = carried.lock() {
                    carried.push(format!("{} {target}", request.method()));
                }
                if let Some(answer) = own(request) {
                    return answer;
                }
                let base = app.read().map(|a| a.clone()).unwrap_or_default();
                forward(&base, &target, request)
            })
        };
        Self {
            server,
            app,
            carried,
        }
    }

    /// Its URL: the app's `public_origin`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Forwards from now on to the app at `url`.
    pub fn forward_to(&self, url: &str) {
        if let Ok(mut app) = self.app.write() {
            *app = url.to_owned();
        }
    }

    /// How many requests the edge carried since the last [`Self::take`].
    pub fn carried(&self) -> usize {
        self.carried.lock().map(|c| c.len()).unwrap_or_default()
    }

    /// What the edge carried since the last call (`METHOD /path?query`),
    /// in order, forgotten once read.
    pub fn take(&self) -> Vec<String> {
        self.carried
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }

    /// [`Self::take`], counted by the service each request was for
    /// (`/_meridian/<service>/...`; anything else under its first word).
    pub fn take_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for line in self.take() {
            let path = line.split_once(' ').map_or("", |(_, p)| p);
            let mut words = path.trim_start_matches('/').split(['/', '?']);
            let first = words.next().unwrap_or_default();
            let service = match first {
                "_meridian" => words.next().unwrap_or_default(),
                other => other,
            };
            *counts.entry(service.to_owned()).or_default() += 1;
        }
        counts
    }
}

/// `request` sent on to the app at `base`, and its answer.
fn forward(base: &str, target: &str, request: &Request) -> LoopbackReply {
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "host" | "content-length" | "connection" | "transfer-encoding"
            )
        })
        .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_owned())))
        .collect();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let body = String::from_utf8_lossy(request.body()).into_owned();
    let body = (!body.is_empty()).then_some(body.as_str());
    match Client::new(base).try_send(request.method().as_str(), target, &headers, body) {
        Ok(reply) => LoopbackReply {
            status: reply.status,
            headers: reply
                .headers
                .into_iter()
                .filter(|(n, _)| {
                    !matches!(
                        n.as_str(),
                        "content-length" | "transfer-encoding" | "connection"
                    )
                })
                .collect(),
            body: reply.body.into_bytes(),
        },
        // What an edge says when the app behind it does not answer.
        Err(_) => LoopbackReply {
            status: 502,
            headers: vec![("content-type".into(), "text/html".into())],
            body: b"<html><body><h1>502 Bad Gateway</h1></body></html>".to_vec(),
        },
    }
}
