//! Keys in the key-value store for a stated deployment, against a store's
//! key quota (Fermyon Cloud: 1,024 keys in the default store). Starts the
//! app (`scripts/kv-keys.sh`: the Cloud profile's build, one SQLite
//! database, no runtime configuration file beyond the store's file),
//! creates `TENANTS` tenants with `TOKENS` tokens in all (each tenant's
//! admin's, then members' round-robin), has every token read two routes
//! in each of three rounds a rate window apart (so windows open, close and
//! are forgotten as in steady use), and counts the store's keys by family.
//!
//! Run: `scripts/kv-keys.sh [TENANTS TOKENS CACHE]` (default 75 1000 off:
//! the deployment docs/storage.md states; CACHE is `resolution_cache`).
//! Fails when the store holds more than `MAX_KEYS`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Result};
use meridian_e2e::api::TenantClient;
use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::Positionals;

/// Fermyon Cloud's published key quota for the default store.
const MAX_KEYS: usize = 1_024;
/// Requests run at once while setting up and reading.
const THREADS: usize = 8;

/// A key's family: its text up to the first part that names one tenant,
/// token or window (`resolution:acme:…` is `resolution`).
fn family(key: &str) -> String {
    let parts: Vec<&str> = key.split([':', '/']).collect();
    match parts.as_slice() {
        ["meridian", caller, _to, .., kind] => format!("meridian/{caller}/…/{kind}"),
        [first, .., last] if last.chars().all(|c| c.is_ascii_digit()) => {
            format!("{first}:…:<window>")
        }
        [first, ..] => format!("{first}:…"),
        [] => String::new(),
    }
}

/// Runs `work` over `items` on [`THREADS`] threads.
fn each<T: Sync>(items: &[T], work: impl Fn(&T) + Sync) {
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(item) = items.get(i) else { break };
                work(item);
            });
        }
    });
}

fn main() -> Result<()> {
    let args = Positionals::from_env()?;
    let (tenants, tokens): (usize, usize) =
        (args.get(0, "TENANTS", 75)?, args.get(1, "TOKENS", 1_000)?);
    let cache: String = args.get(2, "CACHE", "off".to_owned())?;
    let cache = cache.as_str();
    if tokens < tenants {
        bail!("each tenant has its admin's token: {tokens} tokens for {tenants} tenants");
    }
    let app = SpinApp::start_with(
        SpinOptions::default()
            .key_value_file()
            .variable("resolution_cache", cache),
    );
    let slugs: Vec<String> = (0..tenants).map(|i| format!("kv-{i:03}")).collect();
    // One at a time, under the tenant-creation route's 50 a second.
    let made: Vec<TenantClient> = slugs
        .iter()
        .map(|slug| {
            std::thread::sleep(Duration::from_millis(25));
            let tenant = app.tenant(slug);
            tenant.resident("Ada");
            tenant
        })
        .collect();
    // Every token, with the tenant it reads.
    let mut readers: Vec<(usize, String)> = made
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.token.clone()))
        .collect();
    let members: Vec<usize> = (0..tokens - tenants).collect();
    let added = std::sync::Mutex::new(Vec::new());
    each(&members, |&m| {
        let t = m % made.len();
        let (_, token) = made[t].member(&format!("m{m}@k.example.org"), "manager");
        if let Ok(mut a) = added.lock() {
            a.push((t, token));
        }
    });
    readers.extend(added.into_inner().unwrap_or_default());
    let (ok, other) = (AtomicU64::new(0), AtomicU64::new(0));
    for round in 0..3 {
        if round > 0 {
            // Past the rate window (2 s by default) and the throttle's.
            std::thread::sleep(Duration::from_millis(2_500));
        }
        each(&readers, |(t, token)| {
            for route in ["/residents?limit=5", "/announcements?limit=5"] {
                let status = made[*t].get(route).token(token).send().status;
                let counter = if status == 200 { &ok } else { &other };
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let keys = app.key_value_keys();
    let mut families: BTreeMap<String, usize> = BTreeMap::new();
    for key in &keys {
        *families.entry(family(key)).or_default() += 1;
    }
    println!(
        "{tenants} tenants, {} tokens, resolution_cache {cache}, {} reads ({} answered 200): {} keys in the store",
        readers.len(),
        ok.load(Ordering::Relaxed) + other.load(Ordering::Relaxed),
        ok.load(Ordering::Relaxed),
        keys.len()
    );
    for (family, n) in &families {
        println!("  {n:>6}  {family}");
    }
    if keys.len() > MAX_KEYS {
        bail!("{} keys, over {MAX_KEYS}", keys.len());
    }
    Ok(())
}
