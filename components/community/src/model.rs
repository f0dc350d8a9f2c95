//! Community's resources as the API shows them.

use meridian_platform::time::Timestamp;
use serde::Serialize;
use serde_json::Value;

meridian_platform::row_id!(
    /// A resident's id.
    ResidentId
);
meridian_platform::row_id!(
    /// A complaint's id.
    ComplaintId
);
meridian_platform::row_id!(
    /// An announcement's id.
    AnnouncementId
);

/// A resident of the community.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resident {
    /// UUID.
    pub id: ResidentId,
    /// Full name.
    pub name: String,
    /// Unit (apartment, house number).
    pub unit: String,
    /// Contact email, if known.
    pub email: Option<String>,
    /// The user account linked to this resident, if any.
    pub user_id: Option<String>,
    /// RFC 3339.
    pub created_at: Timestamp,
    /// RFC 3339.
    pub updated_at: Timestamp,
}

/// A complaint's place in its life: `open → in_progress → resolved → closed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComplaintStatus {
    /// Filed, not yet picked up.
    Open,
    /// Being worked on.
    InProgress,
    /// Fixed, awaiting closure.
    Resolved,
    /// Done.
    Closed,
}

meridian_platform::serialize_as_str!(ComplaintStatus);

impl ComplaintStatus {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::InProgress => "in_progress",
            Self::Resolved => "resolved",
            Self::Closed => "closed",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        match s {
            "open" => Ok(Self::Open),
            "in_progress" => Ok(Self::InProgress),
            "resolved" => Ok(Self::Resolved),
            "closed" => Ok(Self::Closed),
            _ => Err("must be open, in_progress, resolved or closed"),
        }
    }

    /// Whether a complaint may move from `self` to `to`: one step forward only.
    pub fn can_become(self, to: Self) -> bool {
        matches!(
            (self, to),
            (Self::Open, Self::InProgress)
                | (Self::InProgress, Self::Resolved)
                | (Self::Resolved, Self::Closed)
        )
    }
}

/// A complaint about something in the community.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Complaint {
    /// UUID.
    pub id: ComplaintId,
    /// The resident it concerns.
    pub resident_id: ResidentId,
    /// One line.
    pub subject: String,
    /// The details.
    pub body: String,
    /// Where it is in its life.
    pub status: ComplaintStatus,
    /// The user who filed it.
    pub filed_by: String,
    /// RFC 3339.
    pub created_at: Timestamp,
    /// RFC 3339.
    pub updated_at: Timestamp,
}

/// A notice to the whole community.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Announcement {
    /// UUID.
    pub id: AnnouncementId,
    /// Headline.
    pub title: String,
    /// Text.
    pub body: String,
    /// The user who published it.
    pub author_id: String,
    /// RFC 3339.
    pub published_at: Timestamp,
}

/// An event delivered to a resident.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notification {
    /// The event's id (unique: a repeated delivery is the same notification).
    pub event_id: String,
    /// E.g. `invoice.created`, `payment.received`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's data.
    pub payload: Value,
    /// When the event happened (RFC 3339).
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complaints_move_one_step_forward_only() {
        use ComplaintStatus::*;
        let all = [Open, InProgress, Resolved, Closed];
        for from in all {
            for to in all {
                let allowed = matches!(
                    (from, to),
                    (Open, InProgress) | (InProgress, Resolved) | (Resolved, Closed)
                );
                assert_eq!(from.can_become(to), allowed, "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn statuses_round_trip() {
        for s in ["open", "in_progress", "resolved", "closed"] {
            let status = ComplaintStatus::parse(s).unwrap();
            assert_eq!(status.as_str(), s);
            assert_eq!(serde_json::to_value(status).unwrap(), s);
        }
        assert!(ComplaintStatus::parse("done").is_err());
    }
}
