//! The stable, machine-readable error codes of the wire contract, and
//! what each is sent with: its status, title and whether it is retryable.

use http::StatusCode;

/// The stable, machine-readable error codes of the wire contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The request is malformed (400).
    InvalidRequest,
    /// `x-meridian-timeout-ms` is malformed (400).
    InvalidTimeout,
    /// `Idempotency-Key` is malformed (400).
    InvalidIdempotencyKey,
    /// Missing or bad credentials (401).
    Unauthorized,
    /// Authenticated but not allowed (403).
    Forbidden,
    /// No such resource, or not visible to the caller (404).
    NotFound,
    /// No such tenant, or not visible to the caller (404).
    TenantNotFound,
    /// The path exists but does not take this method (405).
    MethodNotAllowed,
    /// The resource's state does not allow this (409).
    Conflict,
    /// The same idempotency key is still being processed (409).
    IdempotencyKeyInProgress,
    /// The member holds as many live tokens as a member may (409).
    TooManyTokens,
    /// The body is larger than accepted (413).
    PayloadTooLarge,
    /// The body is declared as something other than JSON (415).
    UnsupportedMediaType,
    /// The body is well-formed but its values are not acceptable (422).
    ValidationFailed,
    /// The idempotency key was used before with a different body (422).
    IdempotencyKeyReused,
    /// The tenant is over its request rate (429).
    RateLimited,
    /// Something failed on our side (500).
    Internal,
    /// A downstream service could not be reached or answered badly (502/503).
    UpstreamUnavailable,
    /// Refused at the gateway before any work, in proportion to recent
    /// overload: the route's requests were running out of budget (503).
    Overloaded,
    /// The service's database cannot take the statement: its disk is
    /// full, or the file is read-only, unreadable or not a database (503).
    /// Nothing was written; the same request succeeds once the fault clears.
    StorageUnavailable,
    /// The request budget ran out (504).
    DeadlineExceeded,
}

impl ErrorCode {
    /// Every code, for exhaustive tests and documentation.
    pub const ALL: [ErrorCode; 21] = [
        Self::InvalidRequest,
        Self::InvalidTimeout,
        Self::InvalidIdempotencyKey,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::TenantNotFound,
        Self::MethodNotAllowed,
        Self::Conflict,
        Self::IdempotencyKeyInProgress,
        Self::TooManyTokens,
        Self::PayloadTooLarge,
        Self::UnsupportedMediaType,
        Self::ValidationFailed,
        Self::IdempotencyKeyReused,
        Self::RateLimited,
        Self::Internal,
        Self::UpstreamUnavailable,
        Self::Overloaded,
        Self::StorageUnavailable,
        Self::DeadlineExceeded,
    ];

    /// The snake_case code sent as `code`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidTimeout => "invalid_timeout",
            Self::InvalidIdempotencyKey => "invalid_idempotency_key",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::TenantNotFound => "tenant_not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::IdempotencyKeyInProgress => "idempotency_key_in_progress",
            Self::TooManyTokens => "too_many_tokens",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::ValidationFailed => "validation_failed",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::RateLimited => "rate_limited",
            Self::Internal => "internal",
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::Overloaded => "overloaded",
            Self::StorageUnavailable => "storage_unavailable",
            Self::DeadlineExceeded => "deadline_exceeded",
        }
    }

    /// The code for a wire string, if it is one of ours.
    pub fn from_wire(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// The HTTP status this code is sent with by default.
    pub const fn status(self) -> StatusCode {
        match self {
            Self::InvalidRequest | Self::InvalidTimeout | Self::InvalidIdempotencyKey => {
                StatusCode::BAD_REQUEST
            }
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound | Self::TenantNotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict | Self::IdempotencyKeyInProgress | Self::TooManyTokens => {
                StatusCode::CONFLICT
            }
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::ValidationFailed | Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::UpstreamUnavailable => StatusCode::BAD_GATEWAY,
            Self::Overloaded | Self::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// A short human title, constant per code.
    pub const fn title(self) -> &'static str {
        match self {
            Self::InvalidRequest => "Invalid request",
            Self::InvalidTimeout => "Invalid timeout",
            Self::InvalidIdempotencyKey => "Invalid idempotency key",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "Not found",
            Self::TenantNotFound => "Tenant not found",
            Self::MethodNotAllowed => "Method not allowed",
            Self::Conflict => "Conflict",
            Self::IdempotencyKeyInProgress => "Idempotency key in progress",
            Self::TooManyTokens => "Too many tokens",
            Self::PayloadTooLarge => "Payload too large",
            Self::UnsupportedMediaType => "Unsupported media type",
            Self::ValidationFailed => "Validation failed",
            Self::IdempotencyKeyReused => "Idempotency key reused",
            Self::RateLimited => "Rate limited",
            Self::Internal => "Internal error",
            Self::UpstreamUnavailable => "Upstream unavailable",
            Self::Overloaded => "Overloaded",
            Self::StorageUnavailable => "Storage unavailable",
            Self::DeadlineExceeded => "Deadline exceeded",
        }
    }

    /// Whether the same request may succeed if the client sends it again.
    pub const fn retryable(self) -> bool {
        matches!(
            self,
            Self::IdempotencyKeyInProgress
                | Self::RateLimited
                | Self::UpstreamUnavailable
                | Self::Overloaded
                | Self::StorageUnavailable
                | Self::DeadlineExceeded
        )
    }
}
