//! Community's SQL. Every tenant-scoped function takes the store scoped to
//! the request and its tenant first, and its rows by their typed ids; the
//! store checks the budget before each statement; every query filters by
//! tenant.

use meridian_platform::http::page::Window;
use meridian_platform::http::scoped::Scoped;
use meridian_platform::store::batch::Write;
use meridian_platform::store::db::{Database, DbError, Row, Store};
use meridian_platform::tenancy::TenantId;
use meridian_platform::time::Timestamp;
use meridian_platform::{Clock, RequestContext};

use crate::model::{
    Announcement, AnnouncementId, Complaint, ComplaintId, ComplaintStatus, Notification, Resident,
    ResidentId,
};

/// Community's storage.
pub type Db<D, C> = Store<D, C>;

const RESIDENT_COLUMNS: &str = "id, name, unit, email, user_id, created_at, updated_at";

fn resident_from(r: &Row) -> Result<Resident, DbError> {
    Ok(Resident {
        id: ResidentId::stored(r.text("id")?),
        name: r.text("name")?.to_owned(),
        unit: r.text("unit")?.to_owned(),
        email: r.opt_text("email")?.map(str::to_owned),
        user_id: r.opt_text("user_id")?.map(str::to_owned),
        created_at: r.timestamp("created_at")?,
        updated_at: r.timestamp("updated_at")?,
    })
}

/// A page of live residents after `after`, in creation order.
pub fn list_residents<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    window: Window,
) -> Result<Vec<(i64, Resident)>, DbError> {
    s.listed(
        &format!(
            "SELECT {RESIDENT_COLUMNS}, seq FROM residents
             WHERE tenant_id = ? AND deleted_at IS NULL AND seq > ? ORDER BY seq LIMIT ?"
        ),
        [s.tenant()],
        window,
        resident_from,
    )
}

/// A live resident of the tenant.
pub fn resident<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ResidentId,
) -> Result<Option<Resident>, DbError> {
    s.one(
        &format!("SELECT {RESIDENT_COLUMNS} FROM residents WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL"),
        &[s.tenant(), id.into()],
        resident_from,
    )
}

/// The resident, held until the transaction ends (PostgreSQL's `FOR
/// UPDATE`; SQLite's transaction holds its one write lock already): a
/// change read-modified-written from it is not lost to a concurrent one.
pub fn resident_held<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ResidentId,
) -> Result<Option<Resident>, DbError> {
    s.one(
        &format!(
            "SELECT {RESIDENT_COLUMNS} FROM residents WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL{}",
            s.store.db().dialect().for_update()
        ),
        &[s.tenant(), id.into()],
        resident_from,
    )
}

/// The ids of the tenant's residents linked to `user_id` (a member's person id).
pub fn residents_linked_to<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    user_id: &str,
) -> Result<Vec<ResidentId>, DbError> {
    s.store.query(
        s.ctx,
        "SELECT id FROM residents WHERE tenant_id = ? AND user_id = ? AND deleted_at IS NULL ORDER BY id",
        &[s.tenant(), user_id.into()],
    )?
    .iter()
    .map(|r| r.text("id").map(ResidentId::stored))
    .collect()
}

/// The write that inserts or rewrites a resident (within its tenant).
pub fn save_resident<D: Database, C: Clock>(s: &Scoped<'_, D, C>, r: &Resident) -> Write {
    Write::new(
        "INSERT INTO residents (id, tenant_id, name, unit, email, user_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, unit = excluded.unit, email = excluded.email,
             user_id = excluded.user_id, updated_at = excluded.updated_at
         WHERE residents.tenant_id = excluded.tenant_id",
        vec![
            r.id.as_str().into(),
            s.tenant(),
            r.name.as_str().into(),
            r.unit.as_str().into(),
            r.email.clone().into(),
            r.user_id.clone().into(),
            r.created_at.as_str().into(),
            r.updated_at.as_str().into(),
        ],
    )
}

/// Marks a resident removed.
pub fn delete_resident<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ResidentId,
    at: &Timestamp,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "UPDATE residents SET deleted_at = ? WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL",
        &[at.into(), s.tenant(), id.into()],
    )
}

const COMPLAINT_COLUMNS: &str =
    "id, resident_id, subject, body, status, filed_by, created_at, updated_at";

fn complaint_from(r: &Row) -> Result<Complaint, DbError> {
    Ok(Complaint {
        id: ComplaintId::stored(r.text("id")?),
        resident_id: ResidentId::stored(r.text("resident_id")?),
        subject: r.text("subject")?.to_owned(),
        body: r.text("body")?.to_owned(),
        status: r.parsed("status", ComplaintStatus::parse)?,
        filed_by: r.text("filed_by")?.to_owned(),
        created_at: r.timestamp("created_at")?,
        updated_at: r.timestamp("updated_at")?,
    })
}

/// Which complaints a list shows.
pub struct ComplaintFilter<'a> {
    /// Only those filed by this user (residents see their own).
    pub filed_by: Option<&'a str>,
    /// Only those in this status.
    pub status: Option<ComplaintStatus>,
}

/// A page of complaints after `after`, in creation order.
pub fn list_complaints<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    filter: &ComplaintFilter<'_>,
    window: Window,
) -> Result<Vec<(i64, Complaint)>, DbError> {
    s.listed(
        &format!(
            "SELECT {COMPLAINT_COLUMNS}, seq FROM complaints
             WHERE tenant_id = ? AND (CAST(? AS TEXT) IS NULL OR filed_by = ?) AND (CAST(? AS TEXT) IS NULL OR status = ?) AND seq > ?
             ORDER BY seq LIMIT ?"
        ),
        [
            s.tenant(),
            filter.filed_by.into(),
            filter.filed_by.into(),
            filter.status.map(ComplaintStatus::as_str).into(),
            filter.status.map(ComplaintStatus::as_str).into(),
        ],
        window,
        complaint_from)
}

/// A complaint of the tenant.
pub fn complaint<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ComplaintId,
) -> Result<Option<Complaint>, DbError> {
    s.one(
        &format!("SELECT {COMPLAINT_COLUMNS} FROM complaints WHERE tenant_id = ? AND id = ?"),
        &[s.tenant(), id.into()],
        complaint_from,
    )
}

/// Inserts a complaint.
pub fn insert_complaint<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    c: &Complaint,
) -> Result<(), DbError> {
    s.store.execute(
        s.ctx,
        "INSERT INTO complaints (id, tenant_id, resident_id, subject, body, status, filed_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            c.id.as_str().into(),
            s.tenant(),
            c.resident_id.as_str().into(),
            c.subject.as_str().into(),
            c.body.as_str().into(),
            c.status.as_str().into(),
            c.filed_by.as_str().into(),
            c.created_at.as_str().into(),
            c.updated_at.as_str().into(),
        ],
    )
}

/// Moves a complaint from `from` to `to`; false if its status was no longer `from`.
pub fn set_complaint_status<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    id: &ComplaintId,
    (from, to): (ComplaintStatus, ComplaintStatus),
    at: &Timestamp,
) -> Result<bool, DbError> {
    let rows = s.store.query(
        s.ctx,
        "UPDATE complaints SET status = ?, updated_at = ? WHERE tenant_id = ? AND id = ? AND status = ? RETURNING id",
        &[to.as_str().into(), at.into(), s.tenant(), id.into(), from.as_str().into()],
    )?;
    Ok(!rows.is_empty())
}

fn announcement_from(r: &Row) -> Result<Announcement, DbError> {
    Ok(Announcement {
        id: AnnouncementId::stored(r.text("id")?),
        title: r.text("title")?.to_owned(),
        body: r.text("body")?.to_owned(),
        author_id: r.text("author_id")?.to_owned(),
        published_at: r.timestamp("published_at")?,
    })
}

/// A page of announcements after `after`, in publication order.
pub fn list_announcements<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    window: Window,
) -> Result<Vec<(i64, Announcement)>, DbError> {
    s.listed(
        "SELECT id, title, body, author_id, published_at, seq FROM announcements
         WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        [s.tenant()],
        window,
        announcement_from,
    )
}

/// The write that inserts an announcement.
pub fn insert_announcement<D: Database, C: Clock>(s: &Scoped<'_, D, C>, a: &Announcement) -> Write {
    Write::new(
        "INSERT INTO announcements (id, tenant_id, title, body, author_id, published_at) VALUES (?, ?, ?, ?, ?, ?)",
        vec![
            a.id.as_str().into(),
            s.tenant(),
            a.title.as_str().into(),
            a.body.as_str().into(),
            a.author_id.as_str().into(),
            a.published_at.as_str().into(),
        ],
    )
}

/// A delivered event to store.
pub struct NewNotification<'a> {
    /// Event UUID (primary key).
    pub event_id: &'a str,
    /// Tenant UUID.
    pub tenant_id: &'a TenantId,
    /// Resident UUID.
    pub resident_id: &'a ResidentId,
    /// Event type.
    pub kind: &'a str,
    /// JSON payload.
    pub payload: &'a str,
    /// When the event happened.
    pub created_at: &'a Timestamp,
    /// When it arrived here.
    pub received_at: &'a Timestamp,
}

/// Stores a notification unless its event is already stored; true if stored now.
pub fn insert_notification<D: Database, C: Clock>(
    db: &Db<D, C>,
    ctx: &RequestContext,
    n: &NewNotification<'_>,
) -> Result<bool, DbError> {
    let rows = db.query(
        ctx,
        "INSERT INTO notifications (event_id, tenant_id, resident_id, type, payload, created_at, received_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
        &[
            n.event_id.into(),
            n.tenant_id.into(),
            n.resident_id.into(),
            n.kind.into(),
            n.payload.into(),
            n.created_at.into(),
            n.received_at.into(),
        ],
    )?;
    Ok(!rows.is_empty())
}

/// A page of a resident's notifications after `after`, in the order they
/// arrived: events are delivered after their write's answer and redelivered
/// by the relay, so an older event can arrive after a newer one, and only
/// arrival order lets a cursor never skip one.
pub fn list_notifications<D: Database, C: Clock>(
    s: &Scoped<'_, D, C>,
    resident: &ResidentId,
    window: Window,
) -> Result<Vec<(i64, Notification)>, DbError> {
    s.listed(
        "SELECT event_id, type, payload, created_at, seq FROM notifications
         WHERE tenant_id = ? AND resident_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        [s.tenant(), resident.into()],
        window,
        |r| {
            Ok(Notification {
                event_id: r.text("event_id")?.to_owned(),
                kind: r.text("type")?.to_owned(),
                payload: serde_json::from_str(r.text("payload")?)
                    .unwrap_or(serde_json::Value::Null),
                created_at: r.timestamp("created_at")?,
            })
        },
    )
}
