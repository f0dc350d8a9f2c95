//! The identity schema: `migrations/identity/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_identity.sql",
        sql: include_str!("../../../migrations/identity/0001_identity.sql"),
    },
    Migration {
        version: 2,
        name: "0002_idempotency_records.sql",
        sql: include_str!("../../../migrations/identity/0002_idempotency_records.sql"),
    },
    Migration {
        version: 3,
        name: "0003_tenant_persons.sql",
        sql: include_str!("../../../migrations/identity/0003_tenant_persons.sql"),
    },
    Migration {
        version: 4,
        name: "0004_row_sequence.sql",
        sql: include_str!("../../../migrations/identity/0004_row_sequence.sql"),
    },
];
