//! The identity schema: `migrations/identity/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = meridian_platform::migrations!("identity":
    1 => "0001_identity.sql",
    2 => "0002_idempotency_records.sql" in "shared",
    3 => "0003_tenant_persons.sql",
    4 => "0004_row_sequence.sql",
);
