//! The billing schema: `migrations/billing/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = meridian_platform::migrations!("billing":
    1 => "0001_billing.sql",
    2 => "0002_idempotency_records.sql" in "shared",
    3 => "0003_row_sequence.sql",
    4 => "0004_write_ahead_log.sql",
);
