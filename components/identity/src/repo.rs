//! Identity's SQL. A tenant-scoped function takes the store scoped to the
//! request and its tenant first ([`Scoped`]: the tenant named once, by its
//! type); the others (tenants, platform users, resolving a token, which
//! happen before any tenant is known) take the store and the request
//! context. The store checks the budget before each statement, and each
//! row is named by its typed id: a tenant's, a membership's, a platform
//! user's, a person's (`ActorId`) or a token's cannot be passed for another.

use meridian_platform::http::page::Window;
use meridian_platform::http::scoped::Scoped;
use meridian_platform::store::db::{Database, DbError, Row, Store};
use meridian_platform::tenancy::{ActorId, Role, TenantId, TenantSlug};
use meridian_platform::time::Timestamp;
use meridian_platform::{Clock, RequestContext};

use crate::model::{Member, MembershipId, Tenant, TokenId, UserId};

/// Identity's storage.
pub type Db<D, C> = Store<D, C>;

fn tenant_from(row: &Row) -> Result<Tenant, DbError> {
    Ok(Tenant {
        id: row.parsed("id", str::parse::<TenantId>)?,
        slug: row.text("slug")?.to_owned(),
        name: row.text("name")?.to_owned(),
        created_at: row.timestamp("created_at")?,
    })
}

/// The tenant with this slug.
pub fn tenant_by_slug<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    slug: &TenantSlug,
) -> Result<Option<Tenant>, DbError> {
    let rows = db.query(
        ctx,
        "SELECT id, slug, name, created_at FROM tenants WHERE slug = ?",
        &[slug.as_str().into()],
    )?;
    rows.first().map(tenant_from).transpose()
}

/// The tenant with this id.
pub fn tenant_by_id<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    id: &TenantId,
) -> Result<Option<Tenant>, DbError> {
    let rows = db.query(
        ctx,
        "SELECT id, slug, name, created_at FROM tenants WHERE id = ?",
        &[id.into()],
    )?;
    rows.first().map(tenant_from).transpose()
}

/// Inserts a tenant.
pub fn insert_tenant<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    t: &Tenant,
) -> Result<(), DbError> {
    db.execute(
        ctx,
        "INSERT INTO tenants (id, slug, name, created_at) VALUES (?, ?, ?, ?)",
        &[
            (&t.id).into(),
            t.slug.as_str().into(),
            t.name.as_str().into(),
            t.created_at.as_str().into(),
        ],
    )
}

/// The user with this (normalised) email: `(id, name)`.
pub fn user_by_email<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    email: &str,
) -> Result<Option<(String, String)>, DbError> {
    let rows = db.query(
        ctx,
        "SELECT id, name FROM users WHERE email = ?",
        &[email.into()],
    )?;
    rows.first()
        .map(|r| Ok((r.text("id")?.to_owned(), r.text("name")?.to_owned())))
        .transpose()
}

/// The platform user id for `email`, created (with `name`) if there is
/// none. Internal: tenants never see it or the name stored with it.
pub fn ensure_user<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    email: &str,
    name: &str,
    id: UserId,
    created_at: &Timestamp,
) -> Result<UserId, DbError> {
    if let Some((existing, _)) = user_by_email(db, ctx, email)? {
        return Ok(UserId::stored(&existing));
    }
    // Another tenant may be adding the same person at this moment: the
    // first insert stands, and both read its id.
    db.execute(
        ctx,
        "INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (email) DO NOTHING",
        &[
            id.as_str().into(),
            email.into(),
            name.into(),
            created_at.into(),
        ],
    )?;
    match user_by_email(db, ctx, email)? {
        Some((stored, _)) => Ok(UserId::stored(&stored)),
        None => Err(DbError::Decode(format!(
            "no user for {email} after its insert"
        ))),
    }
}

/// Inserts a membership of the platform user `platform_user_id`; the
/// member's `user_id` and `name` are the tenant's own.
pub fn insert_membership<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    platform_user_id: &UserId,
    m: &Member,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "INSERT INTO memberships (id, tenant_id, user_id, person_id, name, role, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[
            (&m.id).into(),
            s.tenant(),
            platform_user_id.into(),
            (&m.user_id).into(),
            m.name.as_str().into(),
            m.role.as_str().into(),
            m.created_at.as_str().into(),
        ],
    )
}

const MEMBER_COLUMNS: &str = "m.id, m.person_id, u.email, m.name, m.role, m.created_at";

fn member_from(row: &Row) -> Result<Member, DbError> {
    Ok(Member {
        id: MembershipId::stored(row.text("id")?),
        user_id: row.parsed("person_id", str::parse::<ActorId>)?,
        email: row.text("email")?.to_owned(),
        name: row.text("name")?.to_owned(),
        role: row.parsed("role", str::parse::<Role>)?,
        created_at: row.timestamp("created_at")?,
    })
}

/// A page of the tenant's members, in id (creation) order after `after`.
pub fn list_members<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    window: Window,
) -> Result<Vec<(i64, Member)>, DbError> {
    s.listed(
        &format!(
            "SELECT {MEMBER_COLUMNS}, m.seq FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.tenant_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?"
        ),
        [s.tenant()],
        window,
        member_from,
    )
}

/// A member of the tenant by membership id.
pub fn member<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    membership_id: &MembershipId,
) -> Result<Option<Member>, DbError> {
    s.one(
        &format!(
            "SELECT {MEMBER_COLUMNS} FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.tenant_id = ? AND m.id = ?"
        ),
        &[s.tenant(), membership_id.into()],
        member_from,
    )
}

/// The caller's membership and how many live (unrevoked) tokens it holds,
/// its row held until the transaction ends: on PostgreSQL another mint of
/// the same member waits (`FOR UPDATE`) and then counts what it committed,
/// so the cap holds under concurrent mints; no other member waits. On
/// SQLite the transaction holds the one write lock already.
pub fn member_tokens<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    person_id: &ActorId,
) -> Result<Option<(MembershipId, i64)>, DbError> {
    let held = s.store.query(
        s.ctx,
        &format!(
            "SELECT id FROM memberships WHERE tenant_id = ? AND person_id = ?{}",
            s.store.db().dialect().for_update()
        ),
        &[s.tenant(), person_id.into()],
    )?;
    let Some(id) = held
        .first()
        .map(|r| r.text("id").map(MembershipId::stored))
        .transpose()?
    else {
        return Ok(None);
    };
    let live = s.store.query(
        s.ctx,
        "SELECT COUNT(*) AS live FROM api_tokens WHERE tenant_id = ? AND membership_id = ? AND revoked_at IS NULL",
        &[s.tenant(), (&id).into()],
    )?;
    let live = live.first().map_or(Ok(0), |r| r.integer("live"))?;
    Ok(Some((id, live)))
}

/// The membership id of the platform user `user_id` in the tenant.
pub fn membership_of<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    user_id: &UserId,
) -> Result<Option<MembershipId>, DbError> {
    let rows = s.store.query(
        s.ctx,
        "SELECT id FROM memberships WHERE tenant_id = ? AND user_id = ?",
        &[s.tenant(), user_id.into()],
    )?;
    rows.first()
        .map(|r| r.text("id").map(MembershipId::stored))
        .transpose()
}

/// Holds the tenant's row until the transaction ends, so that a rule
/// that counts the tenant's members (a tenant keeps an admin) reads what
/// the tenant's last writer committed: on PostgreSQL another such writer
/// of the same tenant waits (`FOR UPDATE`), and no other tenant does; on
/// SQLite the transaction holds the one write lock already.
pub fn hold_tenant<D: Database, C: Clock>(s: &Scoped<'_, D, C>) -> Result<(), DbError> {
    s.store.query(
        s.ctx,
        &format!(
            "SELECT id FROM tenants WHERE id = ?{}",
            s.store.db().dialect().for_update()
        ),
        &[s.tenant()],
    )?;
    Ok(())
}

/// How many admins the tenant has.
pub fn admin_count<D: Database, C: Clock>(s: &Scoped<'_, D, C>) -> Result<i64, DbError> {
    let rows = s.store.query(
        s.ctx,
        "SELECT COUNT(*) AS admins FROM memberships WHERE tenant_id = ? AND role = ?",
        &[s.tenant(), Role::Admin.as_str().into()],
    )?;
    rows.first().map_or(Ok(0), |r| r.integer("admins"))
}

/// Removes a membership and every token it had; answers the tokens'
/// stored hashes.
pub fn delete_membership<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    membership_id: &MembershipId,
) -> Result<Vec<String>, DbError> {
    let params = [s.tenant(), membership_id.into()];
    let hashes = s
        .store
        .query(
            s.ctx,
            "SELECT token_hash FROM api_tokens WHERE tenant_id = ? AND membership_id = ?",
            &params,
        )?
        .iter()
        .map(|r| r.text("token_hash").map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()?;
    s.store.execute(
        s.ctx,
        "DELETE FROM api_tokens WHERE tenant_id = ? AND membership_id = ?",
        &params,
    )?;
    s.store.execute(
        s.ctx,
        "DELETE FROM memberships WHERE tenant_id = ? AND id = ?",
        &params,
    )?;
    Ok(hashes)
}

/// A new token row.
pub struct NewToken<'a> {
    /// Token UUID.
    pub id: &'a TokenId,
    /// Owning membership.
    pub membership_id: &'a MembershipId,
    /// SHA-256 of the token.
    pub hash: &'a str,
    /// Creation time.
    pub created_at: &'a Timestamp,
}

/// Inserts a token (its hash only).
pub fn insert_token<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    t: &NewToken<'_>,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "INSERT INTO api_tokens (id, tenant_id, membership_id, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        &[t.id.into(), s.tenant(), t.membership_id.into(), t.hash.into(), t.created_at.into()],
    )
}

/// A live token found by hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenOwner {
    /// Token UUID.
    pub token_id: TokenId,
    /// Stored hash (compared again in constant time).
    pub hash: String,
    /// Tenant of the token.
    pub tenant_id: String,
    /// The owner's person id in the token's tenant (the actor).
    pub user_id: String,
    /// Role of the owning membership.
    pub role: Role,
    /// When it was last used, if ever.
    pub last_used_at: Option<Timestamp>,
}

/// The owner of the unrevoked token with this hash.
///
/// With it, in the same statement (one round trip on every request), the id
/// of the tenant whose slug is `slug`, if there is one.
pub fn token_owner<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    hash: &str,
    slug: &str,
) -> Result<Option<(TokenOwner, Option<String>)>, DbError> {
    let rows = db.query(
        ctx,
        "SELECT t.id, t.token_hash, t.tenant_id, m.person_id, m.role, t.last_used_at,
                s.id AS slug_tenant_id
         FROM api_tokens t JOIN memberships m ON m.id = t.membership_id
         LEFT JOIN tenants s ON s.slug = ?
         WHERE t.token_hash = ? AND t.revoked_at IS NULL",
        &[slug.into(), hash.into()],
    )?;
    rows.first()
        .map(|r| {
            let owner = TokenOwner {
                token_id: TokenId::stored(r.text("id")?),
                hash: r.text("token_hash")?.to_owned(),
                tenant_id: r.text("tenant_id")?.to_owned(),
                user_id: r.text("person_id")?.to_owned(),
                role: r.parsed("role", str::parse::<Role>)?,
                last_used_at: r
                    .opt_text("last_used_at")?
                    .map(|_| r.timestamp("last_used_at"))
                    .transpose()?,
            };
            Ok((owner, r.opt_text("slug_tenant_id")?.map(str::to_owned)))
        })
        .transpose()
}

/// Records that a token was used.
pub fn touch_token<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    token_id: &TokenId,
    at: &Timestamp,
) -> Result<(), DbError> {
    db.execute(
        ctx,
        "UPDATE api_tokens SET last_used_at = ? WHERE id = ?",
        &[at.into(), token_id.into()],
    )
}

/// The person (tenant-scoped id) owning a token of the tenant, revoked or
/// not, and the token's stored hash.
pub fn token_owner_in_tenant<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    token_id: &TokenId,
) -> Result<Option<(ActorId, String)>, DbError> {
    let rows = s.store.query(
        s.ctx,
        "SELECT m.person_id, t.token_hash FROM api_tokens t JOIN memberships m ON m.id = t.membership_id
         WHERE t.tenant_id = ? AND t.id = ?",
        &[s.tenant(), token_id.into()],
    )?;
    rows.first()
        .map(|r| {
            let owner = r.parsed("person_id", str::parse::<ActorId>)?;
            Ok((owner, r.text("token_hash")?.to_owned()))
        })
        .transpose()
}

/// Revokes a token.
pub fn revoke_token<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    token_id: &TokenId,
    at: &Timestamp,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "UPDATE api_tokens SET revoked_at = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL",
        &[at.into(), s.tenant(), token_id.into()],
    )
}
