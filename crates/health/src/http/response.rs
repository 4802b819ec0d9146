//! Responses as Go's `net/http` writes them: the handler's headers sorted
//! by name, then `Date`, then `Content-Length` (hyper writes headers in the
//! order given, title-cased by the connection settings).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_LENGTH, DATE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use std::time::SystemTime;

/// A complete response with `headers` (name, value) set by the handler, as
/// Go would send it for a body written in one piece.
pub(crate) fn go_response(status: StatusCode, headers: &[(&'static str, String)], body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let body: Bytes = body.into();
    let mut sorted: Vec<&(&'static str, String)> = headers.iter().collect();
    sorted.sort_by_key(|(name, _)| name.to_ascii_lowercase());

    let mut response = Response::new(Full::new(body.clone()));
    *response.status_mut() = status;
    let map = response.headers_mut();
    for (name, value) in sorted {
        if let Ok(value) = HeaderValue::from_str(value) {
            map.append(HeaderName::from_static(name), value);
        }
    }
    let date = httpdate::fmt_http_date(SystemTime::now());
    if let Ok(date) = HeaderValue::from_str(&date) {
        map.append(DATE, date);
    }
    map.append(CONTENT_LENGTH, HeaderValue::from(body.len()));
    response
}

/// Go's `http.NotFound`: `404 page not found\n` as plain text.
pub(crate) fn not_found() -> Response<Full<Bytes>> {
    go_response(
        StatusCode::NOT_FOUND,
        &[
            ("content-type", "text/plain; charset=utf-8".to_string()),
            ("x-content-type-options", "nosniff".to_string()),
        ],
        "404 page not found\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_sorted_then_date_then_length() {
        let response = go_response(
            StatusCode::OK,
            &[("x-b", "2".to_string()), ("content-type", "t".to_string()), ("x-a", "1".to_string())],
            "hello",
        );
        let names: Vec<&str> = response.headers().keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["content-type", "x-a", "x-b", "date", "content-length"]);
        assert_eq!(response.headers()[CONTENT_LENGTH], "5");
    }
}
