//! The HTTP side: routes, the bearer token, and errors as `{"message": "..."}` with the status
//! of decisions 13 (400, 401, 404, 405, 413, 429, 500).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::git::{GitCache, GitError};
use super::store::{PageError, Store};
use super::WebSettings;
use crate::daemon::Daemon;

/// The API's shared state.
pub struct Web {
    pub daemon: Arc<Daemon>,
    pub settings: WebSettings,
    pub store: Store,
    pub git: GitCache,
}

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }
    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::PAYLOAD_TOO_LARGE, message: message.into() }
    }
    pub fn too_many(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::TOO_MANY_REQUESTS, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }

    /// A body the multipart reader could not take: too large (413) or malformed (400).
    pub fn from_multipart(e: axum::extract::multipart::MultipartError) -> ApiError {
        let status = e.status();
        let message = match status {
            StatusCode::PAYLOAD_TOO_LARGE => format!("the request body is too large: {}", e.body_text()),
            _ => format!("the request is not a valid multipart/form-data body: {}", e.body_text()),
        };
        ApiError { status, message }
    }

    pub fn from_git(e: &GitError) -> ApiError {
        match e {
            GitError::Io(_) => ApiError::internal(format!("fetching the repository failed: {e}")),
            _ => ApiError::bad(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "message": self.message }))).into_response()
    }
}

/// Serves the API on `listener` until `shutdown` fires.
pub async fn serve(
    daemon: Arc<Daemon>,
    settings: WebSettings,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let git = GitCache::new(settings.git_cache.clone(), settings.git_cache_bytes, settings.git_file_root.clone())?;
    let web = Arc::new(Web {
        daemon,
        store: Store::new(settings.page_size, settings.retention),
        settings: settings.clone(),
        git,
    });
    // Finished evaluations nobody reads go after the retention time.
    let janitor = web.clone();
    let stop_janitor = shutdown.clone();
    tokio::spawn(async move {
        let every = (janitor.settings.retention / 4)
            .clamp(std::time::Duration::from_millis(100), std::time::Duration::from_secs(10));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {
                    let expired = janitor.store.expire();
                    if expired > 0 {
                        tracing::info!(expired, "finished evaluations expired unread");
                    }
                }
                _ = stop_janitor.cancelled() => break,
            }
        }
    });
    let app = Router::new()
        .route("/evaluate", post(evaluate))
        .route("/evaluation/{id}/events", get(events))
        .route("/evaluation_events", get(events_alias))
        .route("/openapi.yaml", get(openapi))
        .fallback(|| async { ApiError::not_found("no such resource; see /openapi.yaml") })
        .method_not_allowed_fallback(|| async {
            ApiError {
                status: StatusCode::METHOD_NOT_ALLOWED,
                message: "method not allowed here; see /openapi.yaml".into(),
            }
        })
        .layer(DefaultBodyLimit::max(settings.max_body))
        .with_state(web);
    tracing::info!(addr = %settings.addr, token = settings.token.is_some(), "HTTP evaluation API ready");
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
}

fn authorize(web: &Web, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &web.settings.token else {
        return Ok(());
    };
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    // Compared in constant time: the token is a password.
    match given
        .is_some_and(|g| g.len() == token.len() && g.bytes().zip(token.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0)
    {
        true => Ok(()),
        false => Err(ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: "this server needs Authorization: Bearer <token>".into(),
        }),
    }
}

async fn evaluate(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    if let Err(e) = authorize(&web, &headers) {
        return e.into_response();
    }
    let multipart = match multipart {
        Ok(multipart) => multipart,
        Err(e) => {
            return ApiError::bad(format!("POST /evaluate takes multipart/form-data: {}", e.body_text()))
                .into_response()
        }
    };
    match super::submit::evaluate(web, multipart).await {
        Ok(id) => Json(json!({ "evaluation_id": id })).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn events(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    page(&web, &headers, &id, query.get("after").map(String::as_str))
}

async fn events_alias(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(id) = query.get("evaluation") else {
        return ApiError::bad("evaluation=ID is required").into_response();
    };
    page(&web, &headers, id, query.get("after").map(String::as_str))
}

fn page(web: &Web, headers: &HeaderMap, id: &str, after: Option<&str>) -> Response {
    if let Err(e) = authorize(web, headers) {
        return e.into_response();
    }
    match web.store.page(id, after) {
        Ok(page) => Json(page).into_response(),
        Err(PageError::UnknownEvaluation) => {
            ApiError::not_found(format!("no evaluation {id:?} (unknown, finished and read, or expired)"))
                .into_response()
        }
        Err(PageError::UnknownCursor(cursor)) => ApiError::not_found(format!(
            "cursor {cursor:?} is unknown for evaluation {id:?} (never given, or before a later one you read)"
        ))
        .into_response(),
    }
}

/// `docs/openapi.yaml`, built into the binary.
async fn openapi(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    if let Err(e) = authorize(&web, &headers) {
        return e.into_response();
    }
    ([(header::CONTENT_TYPE, "application/yaml")], include_str!("../../../docs/openapi.yaml")).into_response()
}
