//! Envoy's RLS v3 gRPC API:
//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`, answered
//! by a [`Service`].
//!
//! [`server`] gives the tonic service to mount in a tonic server of one's
//! own; [`serve_grpc`] serves it on a listener until a shutdown signal.
//!
//! A `RateLimitRequest` maps to a [`CheckRequest`] by
//! [`check_request`]: its `domain`, each descriptor's entries, the
//! request's `hits_addend` (0 meaning 1) and each descriptor's own
//! `hits_addend` (a 0 there asks without taking). Two descriptor fields
//! are refused with `INVALID_ARGUMENT` rather than ignored, since
//! ignoring them would answer a different question than the one asked:
//! a `limit` override (the configured limits are the only ones applied)
//! and `is_negative_hits` (hits are never given back).
//!
//! A [`CheckResponse`] maps to a `RateLimitResponse` by
//! [`rate_limit_response`]: the overall code, one status per descriptor
//! (code, `current_limit`, `limit_remaining`, `duration_until_reset`)
//! and, in `response_headers_to_add`, the draft `RateLimit` /
//! `RateLimit-Policy` fields and, on a refusal, `Retry-After`.
//!
//! Errors map by [`status_of`]: an unknown domain is `NOT_FOUND`, any
//! other unanswerable request `INVALID_ARGUMENT`, the message saying why.
//! A message larger than tonic's decoding limit (4 MiB) is refused by the
//! transport with `OUT_OF_RANGE` before it reaches the service.

use std::future::Future;
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    rate_limit, Code as ProtoCode, DescriptorStatus as ProtoStatus, RateLimit,
};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::Duration as ProtoDuration;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

use crate::check::{CheckError, CheckRequest, CheckResponse, Code, Descriptor, DescriptorStatus};
use crate::config::Unit;
use crate::service::Service;

/// The `RateLimitService` of Envoy's RLS v3 API over a [`Service`].
///
/// Cloning is cheap and shares the limits.
#[derive(Debug, Clone)]
pub struct RlsService {
    service: Service,
}

impl RlsService {
    /// Answers from `service`'s limits.
    pub fn new(service: Service) -> RlsService {
        RlsService { service }
    }
}

#[tonic::async_trait]
impl RateLimitService for RlsService {
    /// Decides the request, holds an admission its limit makes wait, and
    /// answers; see the [module](self) for the mapping and the errors.
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let request = check_request(request.get_ref()).map_err(|e| status_of(&e))?;
        let response = self
            .service
            .check(&request)
            .await
            .map_err(|e| status_of(&RequestError::Check(e)))?;
        Ok(Response::new(rate_limit_response(&response)))
    }
}

/// The tonic service answering `ShouldRateLimit` from `service`, to add to
/// a tonic server.
pub fn server(service: Service) -> RateLimitServiceServer<RlsService> {
    RateLimitServiceServer::new(RlsService::new(service))
}

/// Serves the RLS v3 API from `service` on `listener` until `shutdown`
/// completes; then accepts no more connections, answers the calls in
/// flight (a held one included) and returns.
///
/// # Errors
///
/// [`ServeError::Transport`] when the server fails.
pub async fn serve_grpc(
    service: Service,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    Server::builder()
        .serve_with_incoming_shutdown(server(service), incoming(listener), shutdown)
        .await
        .map_err(ServeError::Transport)
}

/// The connections of `listener`, with Nagle's algorithm off: an answer's
/// frames go out as they are written, not held for the peer's delayed ACK
/// (up to 40 ms on Linux).
fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// The gRPC server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The transport (listening, HTTP/2) failed.
    #[error("the gRPC server failed")]
    Transport(#[source] tonic::transport::Error),
}

/// A `RateLimitRequest` that is not answered; nothing was taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A descriptor carries a `limit` override: only the configured limits
    /// are applied.
    #[error("descriptor {descriptor} has a limit override: only configured limits are applied")]
    LimitOverride {
        /// Its index in the request.
        descriptor: usize,
    },
    /// A descriptor sets `is_negative_hits`: hits are never given back.
    #[error("descriptor {descriptor} sets is_negative_hits: hits cannot be given back")]
    NegativeHits {
        /// Its index in the request.
        descriptor: usize,
    },
    /// The request is unanswerable as the service sees it.
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// The [`CheckRequest`] a `RateLimitRequest` asks.
///
/// # Errors
///
/// [`RequestError::LimitOverride`] or [`RequestError::NegativeHits`] for
/// the first descriptor using a field not supported. Sizes are checked
/// later, by [`CheckRequest::validate`].
pub fn check_request(request: &RateLimitRequest) -> Result<CheckRequest, RequestError> {
    let descriptors = request
        .descriptors
        .iter()
        .enumerate()
        .map(|(i, d)| descriptor(i, d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CheckRequest {
        domain: request.domain.clone(),
        descriptors,
        hits_addend: request.hits_addend,
        max_wait: None,
    })
}

fn descriptor(index: usize, d: &RateLimitDescriptor) -> Result<Descriptor, RequestError> {
    if d.limit.is_some() {
        return Err(RequestError::LimitOverride { descriptor: index });
    }
    if d.is_negative_hits {
        return Err(RequestError::NegativeHits { descriptor: index });
    }
    Ok(Descriptor {
        entries: d
            .entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone()))
            .collect(),
        hits_addend: d.hits_addend.as_ref().map(|h| h.value),
    })
}

/// The `RateLimitResponse` answering with `response`.
pub fn rate_limit_response(response: &CheckResponse) -> RateLimitResponse {
    RateLimitResponse {
        overall_code: proto_code(response.overall_code) as i32,
        statuses: response.statuses.iter().map(proto_status).collect(),
        response_headers_to_add: response
            .response_headers()
            .into_iter()
            .map(|(key, value)| HeaderValue {
                key,
                value,
                raw_value: Vec::new(),
            })
            .collect(),
        ..RateLimitResponse::default()
    }
}

fn proto_status(s: &DescriptorStatus) -> ProtoStatus {
    ProtoStatus {
        code: proto_code(s.code) as i32,
        current_limit: s.current_limit().map(|l| RateLimit {
            name: l.name.clone().unwrap_or_default(),
            requests_per_unit: l.requests_per_unit,
            unit: proto_unit(l.unit) as i32,
        }),
        limit_remaining: s.limit_remaining,
        duration_until_reset: Some(proto_duration(s.duration_until_reset)),
        quota: None,
    }
}

fn proto_code(code: Code) -> ProtoCode {
    match code {
        Code::Ok => ProtoCode::Ok,
        Code::OverLimit => ProtoCode::OverLimit,
    }
}

fn proto_unit(unit: Unit) -> rate_limit::Unit {
    match unit {
        Unit::Second => rate_limit::Unit::Second,
        Unit::Minute => rate_limit::Unit::Minute,
        Unit::Hour => rate_limit::Unit::Hour,
        Unit::Day => rate_limit::Unit::Day,
        Unit::Week => rate_limit::Unit::Week,
        Unit::Month => rate_limit::Unit::Month,
        Unit::Year => rate_limit::Unit::Year,
    }
}

/// A protobuf `Duration`; one too long for it (past `i64::MAX` seconds)
/// saturates.
fn proto_duration(d: Duration) -> ProtoDuration {
    ProtoDuration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        // Below 10^9, so it fits.
        nanos: d.subsec_nanos() as i32,
    }
}

/// The gRPC status answering a request that fails with `error`:
/// `NOT_FOUND` for an unknown domain, `INVALID_ARGUMENT` otherwise, with
/// the error's message.
pub fn status_of(error: &RequestError) -> Status {
    match error {
        RequestError::Check(CheckError::UnknownDomain(_)) => Status::not_found(error.to_string()),
        _ => Status::invalid_argument(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::{
        Entry, RateLimitOverride,
    };
    use envoy_types::pb::google::protobuf::UInt64Value;
    use tonic::Code as GrpcCode;

    use super::*;
    use crate::check::{CurrentLimit, MatchedLimit};
    use ratekeeper_tower::Policy;

    fn proto_descriptor(entries: &[(&str, &str)], hits: Option<u64>) -> RateLimitDescriptor {
        RateLimitDescriptor {
            entries: entries
                .iter()
                .map(|(k, v)| Entry {
                    key: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            hits_addend: hits.map(|value| UInt64Value { value }),
            ..RateLimitDescriptor::default()
        }
    }

    fn request(descriptors: Vec<RateLimitDescriptor>, hits_addend: u32) -> RateLimitRequest {
        RateLimitRequest {
            domain: "api".into(),
            descriptors,
            hits_addend,
        }
    }

    #[test]
    fn a_request_maps_its_domain_entries_and_both_hits() {
        let asked = request(
            vec![
                proto_descriptor(&[("user", "alice"), ("path", "/")], None),
                proto_descriptor(&[("ip", "10.0.0.1")], Some(0)),
                proto_descriptor(&[("ip", "10.0.0.2")], Some(u64::MAX)),
            ],
            0,
        );
        let check = check_request(&asked).unwrap();
        assert_eq!(check.domain, "api");
        assert_eq!(check.hits_addend, 0);
        let d = &check.descriptors;
        assert_eq!(
            d[0].entries,
            vec![("user".into(), "alice".into()), ("path".into(), "/".into())]
        );
        assert_eq!(check.hits_of(&d[0]), 1);
        assert_eq!(check.hits_of(&d[1]), 0);
        assert_eq!(check.hits_of(&d[2]), u64::MAX);
        let check = check_request(&request(vec![proto_descriptor(&[("k", "v")], None)], 7));
        let check = check.unwrap();
        assert_eq!(check.hits_of(&check.descriptors[0]), 7);
    }

    #[test]
    fn a_limit_override_or_negative_hits_is_refused_as_invalid() {
        let mut over = proto_descriptor(&[("k", "v")], None);
        over.limit = Some(RateLimitOverride::default());
        let asked = request(vec![proto_descriptor(&[("k", "v")], None), over], 1);
        let err = check_request(&asked).unwrap_err();
        assert_eq!(err, RequestError::LimitOverride { descriptor: 1 });
        assert_eq!(status_of(&err).code(), GrpcCode::InvalidArgument);
        let mut negative = proto_descriptor(&[("k", "v")], Some(1));
        negative.is_negative_hits = true;
        let err = check_request(&request(vec![negative], 1)).unwrap_err();
        assert_eq!(err, RequestError::NegativeHits { descriptor: 0 });
        assert_eq!(status_of(&err).code(), GrpcCode::InvalidArgument);
    }

    #[test]
    fn errors_map_to_not_found_or_invalid_argument_with_their_message() {
        let unknown = RequestError::Check(CheckError::UnknownDomain("x".into()));
        let status = status_of(&unknown);
        assert_eq!(status.code(), GrpcCode::NotFound);
        assert_eq!(status.message(), unknown.to_string());
        let empty = RequestError::Check(CheckError::NoDescriptors);
        let status = status_of(&empty);
        assert_eq!(status.code(), GrpcCode::InvalidArgument);
        assert_eq!(status.message(), CheckError::NoDescriptors.to_string());
    }

    #[tokio::test]
    async fn accepted_connections_send_without_nagles_delay() {
        use tokio_stream::StreamExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = incoming(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let accepted = incoming.next().await.unwrap().unwrap();
        assert!(accepted.nodelay().unwrap());
    }

    fn status(code: Code, limit: Option<MatchedLimit>) -> DescriptorStatus {
        DescriptorStatus {
            code,
            limit,
            limit_remaining: 3,
            duration_until_reset: Duration::from_millis(1_500),
            retry_after: None,
            shadow_over_limit: false,
            store_error: false,
        }
    }

    #[test]
    fn a_response_maps_codes_limits_durations_and_headers() {
        let limit = CurrentLimit {
            name: Some("per-user".into()),
            requests_per_unit: 10,
            unit: Unit::Minute,
        };
        let policy = Policy::new("per-user", 10, 60).unwrap();
        let mut refused = status(Code::OverLimit, Some(MatchedLimit::new(limit, policy)));
        refused.retry_after = Some(Duration::from_millis(1_200));
        let response = CheckResponse {
            overall_code: Code::OverLimit,
            statuses: vec![refused, status(Code::Ok, None)],
            wait: Duration::ZERO,
        };
        let proto = rate_limit_response(&response);
        assert_eq!(proto.overall_code, ProtoCode::OverLimit as i32);
        let s = &proto.statuses;
        assert_eq!(s[0].code, ProtoCode::OverLimit as i32);
        let expected = RateLimit {
            name: "per-user".into(),
            requests_per_unit: 10,
            unit: rate_limit::Unit::Minute as i32,
        };
        assert_eq!(s[0].current_limit, Some(expected));
        assert_eq!(s[0].limit_remaining, 3);
        let reset = ProtoDuration {
            seconds: 1,
            nanos: 500_000_000,
        };
        assert_eq!(s[0].duration_until_reset, Some(reset));
        assert_eq!((s[1].code, s[1].current_limit.as_ref()), (1, None));
        let headers: Vec<_> = proto
            .response_headers_to_add
            .iter()
            .map(|h| (h.key.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("ratelimit-policy", r#""per-user";q=10;w=60;rk-burst=1"#),
                ("ratelimit", r#""per-user";r=3;t=2"#),
                ("retry-after", "2"),
            ]
        );
    }

    #[test]
    fn every_unit_keeps_its_proto_name_and_durations_saturate() {
        for unit in [
            Unit::Second,
            Unit::Minute,
            Unit::Hour,
            Unit::Day,
            Unit::Week,
            Unit::Month,
            Unit::Year,
        ] {
            assert_eq!(proto_unit(unit).as_str_name(), unit.as_proto_name());
        }
        assert_eq!(proto_duration(Duration::MAX).seconds, i64::MAX);
        assert_eq!(proto_duration(Duration::MAX).nanos, 999_999_999);
    }
}
