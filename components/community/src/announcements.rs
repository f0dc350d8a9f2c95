//! Announcements: `GET, POST /v1/{tenant}/announcements`. Members read;
//! admins and managers publish.

use meridian_platform::http::prelude::*;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::store::db::Database;
use meridian_platform::store::idempotency::{write_once, Written};
use meridian_platform::store::page::PageRequest;
use meridian_platform::{Clock, Problem, RequestContext};

use crate::app::Community;
use crate::model::{Announcement, AnnouncementId};
use crate::repo;

/// Lists announcements in publication order, a page at a time.
pub fn list<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let page = PageRequest::from_query(request.query())?;
    page.list(|window| repo::list_announcements(&s, window))
}

/// Publishes an announcement now, authored by the caller.
pub fn create<D: Database, C: Clock>(
    app: &Community<D, C>,
    ctx: &RequestContext,
    request: &Request,
    operation: &str,
) -> Result<Response, Problem> {
    let s = app.scoped(ctx)?;
    let mut b = JsonBody::parse(request.body())?;
    let fields = (b.text("title", 1, 200), b.text("body", 1, 10_000));
    let (title, body) = b.complete(fields)?;
    let author_id = s.scope.actor_id.to_string();
    write_once(&app.store, ctx, request, operation, |tx| {
        let announcement = Announcement {
            id: AnnouncementId::fresh(),
            title,
            body,
            author_id,
            published_at: app.timestamp(),
        };
        repo::insert_announcement(&s.on(tx), &announcement)?;
        Ok(Written::same(StatusCode::CREATED, &announcement))
    })
}
