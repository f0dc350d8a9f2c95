//! The billing schema: `migrations/billing/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_billing.sql",
        sql: include_str!("../../../migrations/billing/0001_billing.sql"),
    },
    Migration {
        version: 2,
        name: "0002_idempotency_records.sql",
        sql: include_str!("../../../migrations/billing/0002_idempotency_records.sql"),
    },
    Migration {
        version: 3,
        name: "0003_row_sequence.sql",
        sql: include_str!("../../../migrations/billing/0003_row_sequence.sql"),
    },
];
