//! The community schema: `migrations/community/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = meridian_platform::migrations!("community":
    1 => "0001_community.sql",
    2 => "0002_idempotency_records.sql" in "shared",
    3 => "0003_row_sequence.sql",
);
