//! Community through the gateway on a real `spin up`: residents with
//! pagination, complaints and their transitions, announcements, roles,
//! bad input, and the event consumer's deduplication.

use meridian_e2e::{SpinApp, SpinOptions};
use serde_json::json;

#[test]
fn residents_page_through_more_than_twenty_rows_without_gaps_or_duplicates() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let mut created: Vec<String> = (0..23)
        .map(|i| acme.resident(&format!("Resident {i:02}")))
        .collect();
    let first = acme.get("/residents").send();
    assert_eq!(
        first.json()["items"].as_array().unwrap().len(),
        20,
        "default page size"
    );
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    let mut added_meanwhile = false;
    loop {
        let path = match &cursor {
            Some(c) => format!("/residents?limit=7&cursor={c}"),
            None => "/residents?limit=7".to_owned(),
        };
        let page = acme.get(&path).send().json();
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_owned()),
        );
        if !added_meanwhile {
            created.push(acme.resident("Added while paging"));
            added_meanwhile = true;
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        seen, created,
        "every row once, in creation order, including the one added mid-way"
    );
    acme.get("/residents?limit=0")
        .send()
        .assert_problem(400, "invalid_request");
    acme.get("/residents?cursor=garbage")
        .send()
        .assert_problem(400, "invalid_request");
}

/// Pages are in commit order within a tenant (on PostgreSQL each tenant's
/// row counter is held from an insert to its commit; on SQLite one writer
/// commits at a time), so a client paging while others write misses no
/// row: a pager follows its cursors while 8 writers add residents to its
/// tenant at once, waits at the end for more, and at last has seen every
/// resident a writer was answered 201 for.
#[test]
fn a_pager_misses_no_row_committed_while_writers_of_its_tenant_insert() {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_app, acme) = SpinApp::with_tenant("acme");
    let writing = AtomicBool::new(true);
    let (created, seen) = std::thread::scope(|s| {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let acme = &acme;
                s.spawn(move || {
                    (0..6)
                        .filter_map(|n| {
                            // A refusal under the tenant's limits is sent
                            // again with its key, as a client would.
                            for _ in 0..20 {
                                let r = acme
                                    .post("/residents")
                                    .key(&format!("pager-{w}-{n}"))
                                    .json(&json!({"name": format!("R{w}-{n}"), "unit": "1A"}));
                                if r.status == 201 {
                                    return Some(r.json()["id"].as_str().unwrap().to_owned());
                                }
                                std::thread::sleep(std::time::Duration::from_millis(50));
                            }
                            None
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let pager = s.spawn(|| {
            let mut seen: Vec<String> = Vec::new();
            let mut cursor: Option<String> = None;
            let mut last_pass = false;
            loop {
                let path = match &cursor {
                    Some(c) => format!("/residents?limit=3&cursor={c}"),
                    None => "/residents?limit=3".to_owned(),
                };
                let r = acme.get(&path).send();
                if r.status != 200 {
                    // Refused under the tenant's limits (it shares them
                    // with 8 writers): read the same page again.
                    assert!(
                        matches!(r.status, 429 | 503 | 504),
                        "a page: {} {}",
                        r.status,
                        r.body
                    );
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    continue;
                }
                let page = r.json();
                for item in page["items"].as_array().expect("items") {
                    let id = item["id"].as_str().unwrap().to_owned();
                    if !seen.contains(&id) {
                        seen.push(id);
                    }
                }
                match page["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    // At the end: wait for more from the same cursor (its
                    // page read again), once more after the writers stop.
                    None if last_pass => return seen,
                    None => {
                        last_pass = !writing.load(Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
            }
        });
        let created: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer"))
            .collect();
        writing.store(false, Ordering::SeqCst);
        (created, pager.join().expect("pager"))
    });
    assert!(created.len() >= 40, "most writes land: {}", created.len());
    let seen: HashSet<String> = seen.into_iter().collect();
    let missed: Vec<&String> = created.iter().filter(|id| !seen.contains(*id)).collect();
    assert!(missed.is_empty(), "the pager missed {missed:?}");
}

#[test]
fn residents_are_read_by_members_and_changed_by_staff() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let (_, resident_token) = acme.member("res@acme.org", "resident");
    let id = acme.resident("Ada");
    let path = format!("/residents/{id}");
    assert_eq!(
        acme.get(&path).token(&resident_token).send().json()["name"],
        "Ada"
    );
    acme.patch(&path)
        .token(&resident_token)
        .json(&json!({"unit": "9"}))
        .assert_problem(403, "forbidden");
    acme.post("/residents")
        .token(&resident_token)
        .json(&json!({"name": "X", "unit": "1"}))
        .assert_problem(403, "forbidden");
    let r = acme
        .patch(&path)
        .json(&json!({"unit": "5C", "email": "Ada@Example.org"}));
    assert_eq!(
        (r.json()["unit"].as_str(), r.json()["email"].as_str()),
        (Some("5C"), Some("ada@example.org"))
    );
    let r = acme
        .post("/residents")
        .json(&json!({"name": "", "unit": 5, "pets": 2}));
    assert_eq!(
        r.assert_problem(422, "validation_failed")["errors"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(acme.delete(&path).send().status, 204);
    acme.get(&path).send().assert_problem(404, "not_found");
}

#[test]
fn complaints_follow_their_lifecycle_and_refuse_other_moves() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let (_, resident_token) = acme.member("res@acme.org", "resident");
    let resident = acme.resident("Ada");
    let r = acme
        .post("/complaints")
        .token(&resident_token)
        .json(&json!({"resident_id": resident, "subject": "Leak", "body": "Water"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let path = format!("/complaints/{}", r.json()["id"].as_str().unwrap());
    acme.patch(&path)
        .token(&resident_token)
        .json(&json!({"status": "in_progress"}))
        .assert_problem(403, "forbidden");
    acme.patch(&path)
        .json(&json!({"status": "closed"}))
        .assert_problem(409, "conflict");
    for status in ["in_progress", "resolved", "closed"] {
        let r = acme.patch(&path).json(&json!({"status": status}));
        assert_eq!(
            (r.status, r.json()["status"].as_str()),
            (200, Some(status)),
            "{}",
            r.body
        );
    }
    acme.patch(&path)
        .json(&json!({"status": "open"}))
        .assert_problem(409, "conflict");
    let missing =
        json!({"resident_id": "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01", "subject": "x", "body": "y"});
    acme.post("/complaints")
        .token(&resident_token)
        .json(&missing)
        .assert_problem(422, "validation_failed");
}

#[test]
fn announcements_are_published_by_staff() {
    let (_app, acme) = SpinApp::with_tenant("acme");
    let (_, resident_token) = acme.member("res@acme.org", "resident");
    let r = acme
        .post("/announcements")
        .json(&json!({"title": "Pool", "body": "Opens Monday"}));
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["author_id"], acme.admin_user_id.as_str());
    acme.post("/announcements")
        .token(&resident_token)
        .json(&json!({"title": "x", "body": "y"}))
        .assert_problem(403, "forbidden");
    assert_eq!(
        acme.get("/announcements")
            .token(&resident_token)
            .send()
            .json()["items"][0]["title"],
        "Pool"
    );
}

#[test]
fn another_tenants_resident_is_not_found_even_by_id() {
    let (app, a) = SpinApp::with_tenant("alpha");
    let b = app.tenant("bravo");
    let id = a.resident("Ada");
    b.get(&format!("/residents/{id}"))
        .send()
        .assert_problem(404, "not_found");
    b.delete(&format!("/residents/{id}"))
        .send()
        .assert_problem(404, "not_found");
    assert_eq!(a.get(&format!("/residents/{id}")).send().status, 200);
}

/// A fresh database's first reads arrive together: each finds the schema
/// missing, one migrates it, and every one of them reads again and
/// answers. Before, a read whose look at the ledger came after another's
/// migration took it for a statement naming what no migration creates and
/// answered 500 (seen beside a 64-connection flood on a fresh app).
#[test]
fn concurrent_first_reads_of_a_fresh_database_all_succeed() {
    // More at once than a tenant may have in progress by default: the
    // concurrency limit is off, its refusals are not the subject.
    let app =
        SpinApp::start_with(SpinOptions::default().variable("tenant_concurrency_limit", "off"));
    // Identity migrates creating the tenant; community is still empty.
    let acme = app.tenant("acme");
    // A long budget: the race is the subject, not how fast 48 first reads
    // migrate (on libSQL, each statement an HTTP call to the server, a
    // loaded machine ran 13 of them past the default 3 s).
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..48)
            .map(|_| {
                s.spawn(|| {
                    acme.get("/residents")
                        .header("x-meridian-timeout-ms", "10000")
                        .send()
                        .status
                })
            })
            .collect();
        readers.into_iter().map(|r| r.join().unwrap_or(0)).collect()
    });
    let failed: Vec<&u16> = statuses.iter().filter(|&&s| s != 200).collect();
    assert!(failed.is_empty(), "statuses other than 200: {failed:?}");
    let bugs: Vec<String> = app
        .log_lines("community")
        .iter()
        .filter(|l| l["event"] == "failure")
        .map(|l| l.to_string())
        .collect();
    assert!(bugs.is_empty(), "community logged failures: {bugs:?}");
}
