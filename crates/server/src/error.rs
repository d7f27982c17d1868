use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub param: Option<String>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param: param.map(String::from),
        }
    }
    pub fn unauthorized() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            kind: "authentication_error",
            message: "invalid or missing API key (send Authorization: Bearer KEY)".into(),
            param: None,
        }
    }
    pub fn busy(waiting: usize) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: "server_busy",
            message: format!("the engine is busy ({waiting} requests waiting); retry later"),
            param: None,
        }
    }
    /// A request for another host or from another site's page (DNS rebinding).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self { status: StatusCode::FORBIDDEN, kind: "forbidden", message: message.into(), param: None }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, kind: "invalid_request_error", message: message.into(), param: None }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, kind: "server_error", message: message.into(), param: None }
    }
}

impl ApiError {
    /// The error as OpenAI sends it, in a response's body or as a stream's last chunk.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": null}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        if self.status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            // The unread rest of the body is still on the connection: close it, or a client
            // that reuses it sees its next request fail ("server disconnected").
            return (self.status, [(axum::http::header::CONNECTION, "close")], axum::Json(body)).into_response();
        }
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<ponder_engine::EngineError> for ApiError {
    fn from(e: ponder_engine::EngineError) -> Self {
        use ponder_engine::EngineError as E;
        match e {
            E::ContextOverflow { .. } => ApiError::bad_request(e.to_string(), Some("max_tokens")),
            E::InvalidRequest(ref r) => ApiError::bad_request(e.to_string(), Some(r.field())),
            E::Template(_) | E::Tokenizer(_) => ApiError::bad_request(e.to_string(), None),
            other => ApiError::internal(other.to_string()),
        }
    }
}
