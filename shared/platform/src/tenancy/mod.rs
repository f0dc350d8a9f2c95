//! Tenant and actor identity as resolved once at the gateway.

pub mod cache;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

/// A tenant's UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TenantId(Uuid);

/// A user's UUID: the actor of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActorId(Uuid);

macro_rules! uuid_newtype {
    ($t:ident) => {
        impl FromStr for $t {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        /// The id as the text column it is stored in.
        impl From<&$t> for meridian_store::row::Value {
            fn from(id: &$t) -> Self {
                id.to_string().into()
            }
        }

        impl $t {
            /// A new one (UUID v7), for a row about to be written.
            pub fn fresh() -> Self {
                Self(Uuid::now_v7())
            }
        }
    };
}

uuid_newtype!(TenantId);
uuid_newtype!(ActorId);

/// A member's role within a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Manages the tenant, its members and everything in it.
    Admin,
    /// Runs the community day to day.
    Manager,
    /// A resident: reads, files complaints.
    Resident,
}

/// A role name that is not `admin`, `manager` or `resident`.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("role must be admin, manager or resident")]
pub struct UnknownRole;

crate::serialize_as_str!(Role);

impl Role {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Manager => "manager",
            Self::Resident => "resident",
        }
    }

    /// Whether this role may change residents, announcements and invoices.
    pub const fn is_staff(self) -> bool {
        matches!(self, Self::Admin | Self::Manager)
    }
}

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "admin" => Ok(Self::Admin),
            "manager" => Ok(Self::Manager),
            "resident" => Ok(Self::Resident),
            _ => Err(UnknownRole),
        }
    }
}

/// A tenant's URL slug: 3–63 of `a-z 0-9 -`, not starting or ending with `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct TenantSlug(String);

/// Why a slug was refused.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "slug must be 3-63 lowercase letters, digits or hyphens, not starting or ending with a hyphen"
)]
pub struct InvalidSlug;

impl TenantSlug {
    /// Accepts a well-formed slug.
    pub fn parse(raw: &str) -> Result<Self, InvalidSlug> {
        let ok = (3..=63).contains(&raw.len())
            && raw
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !raw.starts_with('-')
            && !raw.ends_with('-');
        ok.then(|| Self(raw.to_owned())).ok_or(InvalidSlug)
    }

    /// The slug's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Who is asking, in which tenant: what the gateway resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantScope {
    /// The tenant every query is filtered by.
    pub tenant_id: TenantId,
    /// The authenticated user.
    pub actor_id: ActorId,
    /// The user's role in this tenant.
    pub role: Role,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_slugs_are_accepted() {
        for s in ["abc", "maple-court", "b12", &"a".repeat(63)] {
            assert!(TenantSlug::parse(s).is_ok(), "{s}");
        }
    }

    #[test]
    fn malformed_slugs_are_refused() {
        for s in [
            "ab",
            "",
            "Maple",
            "maple_court",
            "-abc",
            "abc-",
            "ab c",
            "é-abc",
            &"a".repeat(64),
        ] {
            assert_eq!(TenantSlug::parse(s), Err(InvalidSlug), "{s}");
        }
    }

    #[test]
    fn roles_round_trip_and_only_three_exist() {
        for r in [Role::Admin, Role::Manager, Role::Resident] {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert_eq!("Admin".parse::<Role>(), Err(UnknownRole));
        assert_eq!("owner".parse::<Role>(), Err(UnknownRole));
    }

    #[test]
    fn only_admins_and_managers_are_staff() {
        assert!(Role::Admin.is_staff());
        assert!(Role::Manager.is_staff());
        assert!(!Role::Resident.is_staff());
    }

    #[test]
    fn ids_display_as_hyphenated_uuids() {
        let id: TenantId = "6F9619FF-8B86-D011-B42D-00C04FC964FF".parse().unwrap();
        assert_eq!(id.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
    }
}
