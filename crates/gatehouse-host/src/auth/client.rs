//! The HTTP client under rmcp's [`AuthClient`]: it remembers the last authorization challenge
//! a server sent (401 `WWW-Authenticate`, or 403 `insufficient_scope`), because rmcp reports a
//! failed request to its caller only as an error and the host needs the challenge to sign in
//! or step up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse};

/// The last challenge seen, and whether it asked for more scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub header: String,
    pub insufficient_scope: bool,
}

/// Shared between the transport and the connection that may have to sign in.
#[derive(Debug, Clone, Default)]
pub struct Challenges(Arc<Mutex<Option<Challenge>>>);

impl Challenges {
    pub fn take(&self) -> Option<Challenge> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn note<E: std::error::Error + Send + Sync + 'static>(&self, error: &StreamableHttpError<E>) {
        let challenge = match error {
            StreamableHttpError::AuthRequired(e) => Challenge {
                header: e.www_authenticate_header.clone(),
                insufficient_scope: false,
            },
            StreamableHttpError::InsufficientScope(e) => Challenge {
                header: e.www_authenticate_header.clone(),
                insufficient_scope: true,
            },
            _ => return,
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(challenge);
    }
}

/// `C` with its challenges recorded.
#[derive(Clone)]
pub struct Recording<C> {
    inner: C,
    challenges: Challenges,
}

impl<C> Recording<C> {
    pub fn new(inner: C, challenges: Challenges) -> Recording<C> {
        Recording { inner, challenges }
    }
}

/// What the host's OAuth transport runs on.
pub type AuthTransportClient = AuthClient<Recording<reqwest::Client>>;

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Recording<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        if let Err(e) = &result {
            self.challenges.note(e);
        }
        result
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if let Err(e) = &result {
            self.challenges.note(e);
        }
        result
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        if let Err(e) = &result {
            self.challenges.note(e);
        }
        result
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if let Err(e) = &result {
            self.challenges.note(e);
        }
        result
    }
}
