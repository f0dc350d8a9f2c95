//! The `billing` schema: `migrations/billing/NNNN_*.sql`, embedded at build time.

use meridian_platform::migrate::Migration;

/// Every migration, in order.
pub const ALL: &[Migration] = &[];
