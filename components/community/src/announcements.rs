//! Announcements: `POST /v1/{tenant}/announcements` publishes (admins and
//! managers). Members read them with `GET`, a plain page of the store's
//! rows in publication order, served from the route table (`lib.rs`).

use meridian_platform::http::idempotency::Written;
use meridian_platform::http::prelude::*;
use meridian_platform::http::scoped::ServiceStore;
use meridian_platform::input::validate::JsonBody;
use meridian_platform::store::db::Database;
use meridian_platform::{Clock, Problem};

use crate::app::Community;
use crate::model::{Announcement, AnnouncementId};
use crate::repo;
use crate::Call;

/// Publishes an announcement now, authored by the caller.
pub fn create<D: Database, C: Clock>(
    app: &Community<D, C>,
    call: &Call<'_>,
) -> Result<Response, Problem> {
    let s = app.scoped(call.ctx)?;
    let mut b = JsonBody::parse(call.body())?;
    let fields = (b.text("title", 1, 200), b.text("body", 1, 10_000));
    let (title, body) = b.complete(fields)?;
    let author_id = s.scope.actor_id.to_string();
    let announcement = Announcement {
        id: AnnouncementId::fresh(),
        title,
        body,
        author_id,
        published_at: app.timestamp(),
    };
    // Known before it runs: one batch with the key's answer.
    s.write_all_once(
        call,
        vec![repo::insert_announcement(&s, &announcement)],
        Written::same(StatusCode::CREATED, &announcement),
    )
}
