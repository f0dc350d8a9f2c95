//! Meridian's thin adapter to Spin: budgeted outbound HTTP, a pollable
//! sleep, SQLite behind the platform's `Database`, variables, and turning
//! platform answers into Spin responses. Logic lives in `meridian-platform`;
//! this crate only connects it to the runtime.
#![forbid(unsafe_code)]

pub mod client;
pub mod convert;
pub mod internal;
pub mod jitter;
pub mod service;
pub mod sqlite;
pub mod timer;
pub mod vars;

pub use client::SpinHttp;
pub use jitter::RandomJitter;
pub use timer::{sleep, PollSleeper};
