//! The fault matrix on a real `spin up`, at both layers where one service
//! calls another: the gateway in front of billing, and billing in front of
//! community. Every fault × every kind of public request; each cell checks
//! the answer (status, problem code, and the hop for a 504 — or, where the
//! service's 504 lost the race to the gateway's timer, the service's own
//! log of giving up: see `SpinApp::own_504`), the attempts
//! the faulty service actually received, the time the client waited
//! (never past the budget + 10 ms; a cell late and nothing else is sent
//! again, up to three times), and that no write was lost or doubled.
//!
//! The whole matrix runs in well under a minute, so the test command runs
//! it all; `cargo test -p meridian-e2e --test fault_matrix -- --nocapture`
//! prints the table.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use meridian_e2e::api::{call_with, list, TenantClient};
use meridian_e2e::{Client, ReceivedExt, SpinApp, SpinOptions, StandIn, StandInReply, Truncating};
use serde_json::json;

const TOLERANCE: Duration = Duration::from_millis(10);
const BUDGET_MS: u64 = 800;
/// How often a cell whose one fault is lateness is sent again before its
/// lateness counts. Every other check holds on every sample; lateness is a
/// claim about the system, and one sample past `TOLERANCE` on a shared
/// 2-core CI machine was its scheduler, not the gateway (seen once: a hung
/// cell 10.9 ms past an 800 ms budget, in the same run as cells 7 ms
/// inside it). A gateway that ignored the budget is late on every sample.
const LATE_SAMPLES: usize = 3;
/// Long enough for two `Retry-After: 1` waits, with time to spare for
/// the path to the first attempt (a fresh database's migration, a loaded
/// machine): at 2.5 s a first attempt that came 0.7 s late left too little
/// for the third (seen once in a fresh clone's run). The policy's 3
/// attempts stay the most either way.
const RETRY_AFTER_BUDGET_MS: u64 = 3_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Hang,
    Delay,
    Error500,
    Unavailable,
    UnavailableOnce,
    RetryAfter,
    Refused,
    ResetMidBody,
}

const FAULTS: [Fault; 8] = [
    Fault::Hang,
    Fault::Delay,
    Fault::Error500,
    Fault::Unavailable,
    Fault::UnavailableOnce,
    Fault::RetryAfter,
    Fault::Refused,
    Fault::ResetMidBody,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Get,
    KeyedPost,
    UnkeyedPost,
}

const KINDS: [Kind; 3] = [Kind::Get, Kind::KeyedPost, Kind::UnkeyedPost];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// The gateway calls a faulty billing.
    GatewayToBilling,
    /// Billing calls a faulty community.
    BillingToCommunity,
}

/// What a cell must see.
#[derive(Debug)]
struct Expect {
    status: u16,
    code: Option<&'static str>,
    hop: Option<&'static str>,
    /// Requests the faulty service receives (`None`: nothing listens).
    attempts: Option<usize>,
    /// Invoices this request must add (0 or 1).
    writes: usize,
}

fn expect(layer: Layer, fault: Fault, kind: Kind) -> Expect {
    let retried = layer == Layer::BillingToCommunity || kind != Kind::UnkeyedPost;
    let many = if retried { 3 } else { 1 };
    let success = match kind {
        Kind::Get => 200,
        _ => 201,
    };
    // Only at the second layer does a success write a real invoice.
    let writes = usize::from(layer == Layer::BillingToCommunity && kind != Kind::Get);
    let fail = |status, code, attempts| Expect {
        status,
        code: Some(code),
        hop: None,
        attempts,
        writes: 0,
    };
    match fault {
        Fault::Hang => Expect {
            hop: Some(match layer {
                Layer::GatewayToBilling => "gateway",
                Layer::BillingToCommunity => "billing",
            }),
            ..fail(504, "deadline_exceeded", Some(1))
        },
        Fault::Delay => Expect {
            status: success,
            code: None,
            hop: None,
            attempts: Some(1),
            writes,
        },
        Fault::Error500 => match layer {
            // A bare 500 is not a Meridian answer: the gateway's own problem.
            Layer::GatewayToBilling => fail(500, "internal", Some(1)),
            Layer::BillingToCommunity => fail(502, "upstream_unavailable", Some(1)),
        },
        Fault::Unavailable | Fault::RetryAfter | Fault::ResetMidBody => {
            fail(502, "upstream_unavailable", Some(many))
        }
        Fault::UnavailableOnce if retried => Expect {
            status: success,
            code: None,
            hop: None,
            attempts: Some(2),
            writes,
        },
        Fault::UnavailableOnce => fail(502, "upstream_unavailable", Some(1)),
        Fault::Refused => fail(502, "upstream_unavailable", None),
    }
}

/// The faulty service: answers as the current cell's fault says.
#[derive(Clone)]
struct Faulty {
    state: Arc<Mutex<(Fault, usize)>>,
    success: &'static str,
}

impl Faulty {
    fn start(success: &'static str) -> (Self, StandIn) {
        let faulty = Self {
            state: Arc::new(Mutex::new((Fault::Delay, 0))),
            success,
        };
        let script = faulty.clone();
        // Billing delivers a write's event after its answer, so the
        // delivery can reach the stand-in after the next cell has begun:
        // answered at once and kept out of the fault's count, it cannot
        // take the call the next cell's fault is aimed at (an
        // `UnavailableOnce` then failed the event instead of the resident
        // check). Delivery faults are billing's own tests'.
        let stand_in = StandIn::start(move |r| match r.url().starts_with("/internal/events") {
            true => StandInReply::Json(200, "{}".into()),
            false => script.reply(r.method().as_str()),
        });
        (faulty, stand_in)
    }

    fn set(&self, fault: Fault) {
        *self.state.lock().unwrap() = (fault, 0);
    }

    /// The answer to a request with `method`: a success is 201 for a
    /// POST at the first layer (where the stand-in is billing creating an
    /// invoice), 200 otherwise.
    fn reply(&self, method: &str) -> StandInReply {
        let ok = if method == "POST" && self.success.contains("items") {
            201
        } else {
            200
        };
        let (fault, served) = {
            let mut state = self.state.lock().unwrap();
            state.1 += 1;
            *state
        };
        let answer =
            |status: u16, headers: Vec<(&'static str, String)>, body: &str| StandInReply::Delayed {
                delay: Duration::ZERO,
                status,
                headers,
                body: body.to_owned(),
            };
        match fault {
            Fault::Hang => StandInReply::Hang(Duration::from_secs(5)),
            Fault::Delay => StandInReply::Delayed {
                delay: Duration::from_millis(100),
                status: ok,
                headers: Vec::new(),
                body: self.success.to_owned(),
            },
            Fault::Error500 => answer(500, Vec::new(), "{}"),
            Fault::Unavailable => answer(503, Vec::new(), "{}"),
            Fault::UnavailableOnce if served == 1 => answer(503, Vec::new(), "{}"),
            Fault::UnavailableOnce => answer(ok, Vec::new(), self.success),
            Fault::RetryAfter => answer(503, vec![("retry-after", "1".into())], "{}"),
            Fault::Refused | Fault::ResetMidBody => unreachable!("served elsewhere"),
        }
    }
}

struct Cell<'a> {
    layer: Layer,
    fault: Fault,
    kind: Kind,
    client: &'a Client,
    admin: &'a TenantClient,
    resident_token: &'a str,
}

impl Cell<'_> {
    fn budget(&self) -> u64 {
        if self.fault == Fault::RetryAfter {
            RETRY_AFTER_BUDGET_MS
        } else {
            BUDGET_MS
        }
    }

    fn send(&self, key: &str) -> meridian_e2e::Reply {
        let budget = self.budget().to_string();
        let invoice = json!({"resident_id": "01890a5d-ac96-774b-bcce-b302099a8057", "amount_cents": 100, "currency": "EUR", "description": "matrix", "due_date": "2026-12-31"});
        let timeout = ("x-meridian-timeout-ms", budget.as_str());
        let path = self.admin.path("/invoices");
        match self.kind {
            // At the second layer a read reaches community only for a
            // resident-role member (whose residents billing must look up).
            Kind::Get => {
                let token = match self.layer {
                    Layer::GatewayToBilling => self.admin.token.as_str(),
                    Layer::BillingToCommunity => self.resident_token,
                };
                call_with(self.client, token, "GET", &path, &[timeout], None)
            }
            Kind::KeyedPost => call_with(
                self.client,
                &self.admin.token,
                "POST",
                &path,
                &[timeout, ("idempotency-key", key)],
                Some(&invoice),
            ),
            Kind::UnkeyedPost => call_with(
                self.client,
                &self.admin.token,
                "POST",
                &path,
                &[timeout],
                Some(&invoice),
            ),
        }
    }
}

fn invoice_count(client: &Client, tenant: &TenantClient) -> usize {
    list(client, tenant, "/invoices").len()
}

/// Runs every cell of one layer and returns the failures.
fn run_layer(layer: Layer) -> Vec<String> {
    let (success, var, interest) = match layer {
        Layer::GatewayToBilling => (
            r#"{"items":[],"next_cursor":null,"id":"x"}"#,
            "billing_url",
            "/v1/",
        ),
        Layer::BillingToCommunity => (r#"{"resident_ids":[]}"#, "community_url", ""),
    };
    // The call the fault is aimed at (billing's event deliveries after a
    // successful write also reach the stand-in, and are not counted).
    let interest = |kind: Kind| match (layer, kind) {
        (Layer::GatewayToBilling, _) => interest,
        (Layer::BillingToCommunity, Kind::Get) => "/internal/linked-residents",
        (Layer::BillingToCommunity, _) => "/internal/residents/",
    };
    // Each cell is one request's retry behaviour on its own, so the failure
    // memory that would carry one cell's failures into the next is off
    // (tests/tests/memory.rs covers it).
    let memory_off = || SpinOptions::default().variable("failure_memory", "off");
    let app = SpinApp::start_with(memory_off());
    let admin = app.tenant("acme");
    let (_, resident_token) = admin.member("res@acme.org", "resident");
    // Billing's schema made now, before the cells: a fresh database's
    // first request migrates it (at 10 ms from a PostgreSQL server, over a
    // second), and the gateway would take that for the route's recent
    // cost and refuse the next cell's 800 ms budget before any work.
    admin.list("/invoices");
    let (faulty, stand_in) = Faulty::start(success);
    let truncating = Truncating::start();
    let mut app = Some(app);
    let mut current = String::new();
    let mut failures = Vec::new();
    for fault in FAULTS {
        let url = match fault {
            // Nothing listens on port 9 of the loopback.
            Fault::Refused => "http://127.0.0.1:9".to_owned(),
            Fault::ResetMidBody => truncating.url(),
            _ => stand_in.url(),
        };
        if url != current {
            let restarted = app
                .take()
                .unwrap()
                .restart_with(memory_off().variable(var, url.clone()));
            app = Some(restarted);
            current = url;
        }
        let app = app.as_ref().unwrap();
        let client = app.client();
        for kind in KINDS {
            for sample in 1..=LATE_SAMPLES {
                faulty.set(fault);
                let seen_before = stand_in.count(interest(kind));
                let cut_before = truncating.count();
                // At the first layer billing itself is the stand-in: nothing is
                // written, and what it received is the evidence.
                let count = || match layer {
                    Layer::GatewayToBilling => 0,
                    Layer::BillingToCommunity => invoice_count(&client, &admin),
                };
                let writes_before = count();
                let cell = Cell {
                    layer,
                    fault,
                    kind,
                    client: &client,
                    admin: &admin,
                    resident_token: &resident_token,
                };
                let want = expect(layer, fault, kind);
                let r = cell.send(&format!("matrix-{layer:?}-{fault:?}-{kind:?}-{sample}"));
                let received = match fault {
                    Fault::ResetMidBody => Some(truncating.count() - cut_before),
                    Fault::Refused => None,
                    _ => Some(stand_in.count(interest(kind)) - seen_before),
                };
                let body = r.json();
                let writes = count() - writes_before;
                let budget = Duration::from_millis(cell.budget());
                let mut wrong = Vec::new();
                if r.status != want.status {
                    wrong.push(format!("status {} (want {})", r.status, want.status));
                }
                if let Some(code) = want.code {
                    if body["code"] != code
                        || r.header("content-type") != Some("application/problem+json")
                    {
                        wrong.push(format!("code {} (want {code})", body["code"]));
                    }
                }
                let mut note = "";
                if let Some(hop) = want.hop {
                    match app.own_504(hop, &body) {
                        Some(false) => {}
                        Some(true) => {
                            note = " (the service's own 504 lost the race to the gateway's timer)";
                        }
                        None => wrong.push(format!("hop {} (want {hop})", body["hop"])),
                    }
                }
                if received != want.attempts {
                    wrong.push(format!("received {received:?} (want {:?})", want.attempts));
                }
                if writes != want.writes {
                    wrong.push(format!("wrote {writes} (want {})", want.writes));
                }
                let late = r.elapsed > budget + TOLERANCE;
                if late {
                    wrong.push(format!("took {:?} of a {budget:?} budget", r.elapsed));
                }
                if fault == Fault::RetryAfter
                    && want.attempts == Some(3)
                    && r.elapsed < Duration::from_millis(2_000)
                {
                    wrong.push(format!("did not honour Retry-After: {:?}", r.elapsed));
                }
                println!(
                    "{layer:?} | {fault:?} | {kind:?} | {} {} | received {received:?} | {:?} | {}",
                    r.status,
                    body["code"].as_str().unwrap_or("-"),
                    r.elapsed,
                    if wrong.is_empty() {
                        format!("ok{note}")
                    } else {
                        wrong.join("; ")
                    }
                );
                if late && wrong.len() == 1 && sample < LATE_SAMPLES {
                    println!("    (only late: sampled again)");
                    continue;
                }
                if !wrong.is_empty() {
                    failures.push(format!(
                        "{layer:?} {fault:?} {kind:?}: {} — {}",
                        wrong.join("; "),
                        r.body
                    ));
                }
                break;
            }
        }
    }
    failures
}

/// One layer at a time: each starts its own `spin up`, and a cell's
/// timing (budget + 10 ms) is a claim about one request on this machine,
/// not about two matrices sharing its two cores (run side by side, a
/// hung cell was seen 46 ms late in a fresh clone's run).
static ONE_LAYER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs every cell of one layer and fails with every wrong cell named.
fn assert_layer(layer: Layer) {
    let failures = {
        let _turn = ONE_LAYER_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        run_layer(layer)
    };
    assert!(
        failures.is_empty(),
        "{} cells wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_gateway_in_front_of_a_faulty_billing() {
    assert_layer(Layer::GatewayToBilling);
}

#[test]
fn billing_in_front_of_a_faulty_community() {
    assert_layer(Layer::BillingToCommunity);
}
