//! The HTTP API, for any language:
//!
//! * `POST /json`: envoyproxy/ratelimit's endpoint, Envoy's
//!   `RateLimitRequest` and `RateLimitResponse` in protobuf's JSON mapping
//!   (see [`proto_json`]), so its clients work unchanged; 200 when admitted,
//!   429 when over the limit. An admission a limit's `max_wait` allows is
//!   held until due, as over gRPC.
//! * `POST /v1/check`: a plain form (see [`plain`]); answered at once with
//!   the wait the caller must keep before going.
//! * `GET /healthz`: `OK`.
//! * `GET /metrics`: Prometheus' text format.
//!
//! Both checks add the draft `RateLimit` and `RateLimit-Policy` fields (and
//! `Retry-After` on a refusal) to the HTTP response. A body that is not
//! the JSON expected is a 400 with `{"error": "..."}`; a request for an
//! unknown domain a 404; a body over 2 MiB a 413.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{Listener, ListenerExt};
use axum::Router;
use tokio::net::{TcpListener, TcpStream};

use crate::check::{CheckError, CheckResponse, Code};
use crate::service::Service;

pub mod plain;
pub mod proto_json;

/// The routes, on `service`.
pub fn router(service: Service) -> Router {
    Router::new()
        .route("/json", post(json))
        .route("/v1/check", post(check))
        .route("/healthz", get(|| async { "OK" }))
        .route("/metrics", get(metrics))
        .with_state(service)
}

/// Serves [`router`] on `listener` until `shutdown` completes, then
/// answers the requests in flight and returns.
///
/// # Errors
///
/// The listener's I/O error.
pub async fn serve_http(
    service: Service,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    axum::serve(nodelay(listener), router(service))
        .with_graceful_shutdown(shutdown)
        .await
}

/// `listener` with Nagle's algorithm off on each connection it accepts: an
/// answer goes out as it is written, not held for the peer's delayed ACK
/// (up to 40 ms on Linux).
fn nodelay(listener: TcpListener) -> impl Listener<Io = TcpStream, Addr = SocketAddr> {
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("could not set TCP_NODELAY on a connection: {e}");
        }
    })
}

async fn json(State(service): State<Service>, body: Bytes) -> Response {
    let request = match proto_json::parse_request(&body) {
        Ok(r) => r,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    match service.check(&request).await {
        Ok(response) => {
            let body = proto_json::response_body(&response);
            with_fields(status_of(&response), &response, body)
        }
        Err(e) => check_error(&e),
    }
}

async fn check(State(service): State<Service>, body: Bytes) -> Response {
    let request = match plain::parse_request(&body) {
        Ok(r) => r,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    match service.decide(&request).await {
        Ok(response) => {
            let body = plain::response_body(&response);
            with_fields(status_of(&response), &response, body)
        }
        Err(e) => check_error(&e),
    }
}

async fn metrics(State(service): State<Service>) -> Response {
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    (
        [(header::CONTENT_TYPE, content_type)],
        service.metrics_text(),
    )
        .into_response()
}

fn status_of(response: &CheckResponse) -> StatusCode {
    match response.overall_code {
        Code::Ok => StatusCode::OK,
        Code::OverLimit => StatusCode::TOO_MANY_REQUESTS,
    }
}

/// A JSON answer with the response's draft RateLimit fields.
fn with_fields(status: StatusCode, response: &CheckResponse, body: String) -> Response {
    let mut http = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    for (name, value) in &response.response_headers() {
        // The names are ours and the values printable ASCII.
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            http.headers_mut().insert(n, v);
        }
    }
    http
}

fn check_error(e: &CheckError) -> Response {
    let status = match e {
        CheckError::UnknownDomain(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    };
    error(status, &e.to_string())
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn accepted_connections_send_without_nagles_delay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = super::nodelay(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await;
        assert!(accepted.nodelay().unwrap());
    }
}
