//! Why a remote server cannot take a job's requests. A leaf of its own, so that the backend
//! interface can name it without importing the remote backend.

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{url}: the server refused the API key ({status}); check --api-key")]
    BadKey { url: String, status: u16 },
    #[error("{url}: no model named {wanted:?}; the server has: {available}")]
    NoSuchModel { url: String, wanted: String, available: String },
    #[error("{url}: the server lists no models")]
    NoModels { url: String },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url}: unexpected answer: {detail}")]
    Protocol { url: String, detail: String },
    #[error("HTTP {status} from {url}: {body}")]
    Refused { url: String, status: u16, body: String },
}
