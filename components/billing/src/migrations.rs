//! The billing schema: `migrations/billing/NNNN_*.sql`, embedded at build time.

use meridian_platform::store::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = meridian_platform::migrations!("billing":
    1 => "0001_billing.sql",
    2 => "0002_idempotency_records.sql" in "shared",
    3 => "0003_row_sequence.sql",
    4 => "0004_write_ahead_log.sql",
    5 => "0005_idempotency_claim_owner.sql" in "shared",
    6 => "0006_idempotency_tenant_expiry.sql" in "shared",
    7 => "0007_outbox_retention.sql",
);

/// The same schema for PostgreSQL: `migrations/postgres/billing/` and
/// `migrations/postgres/shared/` (that directory's README says how the two
/// histories relate).
pub const POSTGRES: &[Migration] = meridian_platform::migrations!("postgres/billing":
    1 => "0001_billing.sql",
    2 => "0002_idempotency_records.sql" in "postgres/shared",
    3 => "0003_row_sequence.sql" in "postgres/shared",
    4 => "0004_row_sequence_triggers.sql",
    5 => "0005_idempotency_claim_owner.sql" in "postgres/shared",
    6 => "0006_idempotency_tenant_expiry.sql" in "postgres/shared",
    7 => "0007_tenant_row_sequence.sql" in "postgres/shared",
    8 => "0008_role_ceilings.sql" in "postgres/shared",
    9 => "0009_batch_refusal.sql" in "postgres/shared",
    10 => "0010_outbox_retention.sql",
);
