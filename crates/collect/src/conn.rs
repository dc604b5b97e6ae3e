//! One accepted connection, TCP or Unix, behind one type.

use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream from a client.
pub(crate) trait Conn: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static> Conn for T {}

/// A boxed connection.
pub(crate) type BoxConn = Box<dyn Conn>;
