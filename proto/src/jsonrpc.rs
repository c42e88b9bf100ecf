//! JSON-RPC 2.0 frames as segid speaks them: one JSON object per `\n`-terminated line.
//!
//! A request runs until its response; while it runs the daemon may send notifications
//! `{"method":"event","params":{"id":<request id>,"event":{...}}}` for it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The daemon failed for a reason that is not the request's fault.
pub const INTERNAL_ERROR: i64 = -32603;
/// segi's own: the daemon is shutting down and takes no new runs.
pub const SHUTTING_DOWN: i64 = -32001;
/// segi's own: the request was cancelled (`cancel` or a closed connection).
pub const CANCELLED: i64 = -32002;
/// segi's own: a request with this id is already running on this connection.
pub const DUPLICATE_ID: i64 = -32003;

/// A request (with `id`) or a notification (without) from a client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    pub fn new(id: impl Into<Value>, method: &str, params: Value) -> Self {
        Request { jsonrpc: "2.0".into(), id: Some(id.into()), method: method.into(), params: Some(params) }
    }
}

/// The error member of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }
}

/// A response to one request: exactly one of `result` and `error`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    pub jsonrpc: String,
    pub id: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    pub fn success(id: Value, result: Value) -> Self {
        Response { jsonrpc: "2.0".into(), id, result: Some(result), error: None }
    }
    pub fn failure(id: Value, error: RpcError) -> Self {
        Response { jsonrpc: "2.0".into(), id, result: None, error: Some(error) }
    }
}

/// The params of an `event` notification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventParams {
    pub id: Value,
    pub event: Value,
}

/// Anything the daemon sends: a response or an `event` notification.
#[derive(Debug, Clone)]
pub enum ServerMessage {
    Response(Response),
    Event(EventParams),
}

impl ServerMessage {
    /// Reads one line the daemon sent.
    pub fn parse(line: &str) -> Result<Self, serde_json::Error> {
        let value: Value = serde_json::from_str(line)?;
        if value.get("method").is_some() {
            let request: Request = serde_json::from_value(value)?;
            let params = request.params.unwrap_or(Value::Null);
            Ok(ServerMessage::Event(serde_json::from_value(params)?))
        } else {
            Ok(ServerMessage::Response(serde_json::from_value(value)?))
        }
    }
}

/// Builds an `event` notification line for request `id`. Serialized straight from `event`
/// (not through a `Value`, which would sort keys): a data event's payload keeps the
/// evaluator's own text, key order included.
pub fn event_notification(id: &Value, event: &impl Serialize) -> String {
    #[derive(Serialize)]
    struct Params<'a, E> {
        id: &'a Value,
        event: &'a E,
    }
    #[derive(Serialize)]
    struct Notification<'a, E> {
        jsonrpc: &'static str,
        method: &'static str,
        params: Params<'a, E>,
    }
    let notification = Notification { jsonrpc: "2.0", method: "event", params: Params { id, event } };
    // Serializing plain structs of strings and JSON values cannot fail.
    serde_json::to_string(&notification).unwrap_or_default()
}
