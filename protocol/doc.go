// Package protocol speaks the Kafka wire protocol over TCP: a Server that
// accepts connections, frames and decodes requests and writes responses in
// order, and a Client for outbound node-to-node requests (raft Vote/Fetch,
// replica fetchers, broker -> controller forwarding). Messages are franz-go
// kmsg types; the header is parsed with kbin. The package imports no other
// project package.
//
// # Frames
//
// Every request and response is one frame: a big-endian int32 size followed
// by that many bytes.
//
//	request frame                        response frame
//	+--------------------------+         +--------------------------+
//	| size            int32    |         | size            int32    |
//	+--------------------------+         +--------------------------+
//	| request_api_key int16    |         | correlation_id  int32    |
//	| request_api_ver int16    |         | tagged fields   (v1 only)|
//	| correlation_id  int32    |         +--------------------------+
//	| client_id  nullable str  |         | response body (kmsg)     |
//	| tagged fields   (v2 only)|         +--------------------------+
//	+--------------------------+
//	| request body (kmsg)      |
//	+--------------------------+
//
// The client id is an int16-length nullable string even in flexible headers
// (it is never compact); ControlledShutdown v0 (header v0) has none. Request
// header v2, with tagged fields, is used exactly when the request version is
// flexible (KIP-482): ApiVersions v3+, Produce v9+, Fetch v12+, Metadata v9+,
// every KRaft API from v0. Response header v1 (one tags byte, normally 0) is
// used when the response is flexible, EXCEPT for ApiVersions, whose response
// header is always v0 so that a client can read it whatever version it asked
// for.
//
// # Decoding defensively
//
// The server reads the 4-byte size and rejects a size below 0 or above
// socket.request.max.bytes (Server.MaxRequestBytes, default 100 MiB) before
// allocating; a big frame's buffer grows as its bytes arrive rather than
// trusting the size up front. Then (DecodeRequest):
//
//   - an API key kmsg does not know, or that the VersionTable does not serve,
//     closes the connection;
//   - a version outside the served range closes the connection, except for
//     ApiVersions: per KIP-511 the server answers a v0 ApiVersionsResponse
//     with error UNSUPPORTED_VERSION (35) listing only the ApiVersions range,
//     without parsing the body, and keeps the connection open so that the
//     client retries at a version it can use;
//   - a truncated body, garbage, or trailing bytes after the body close the
//     connection (Kafka's InvalidRequestException does the same).
//
// kbin's reader bounds every array and tag count by the bytes left, so a
// huge count in a tiny frame fails without allocating for it (see
// TestDecodeAllocationBounded and the fuzz targets).
//
// # Ordering per connection
//
//	          +----------+  queue (MaxQueuedRequests, default 16)  +-----------+
//	socket -> | readLoop | -------------------------------------->  | serveLoop | -> socket
//	          +----------+  decoded requests, in arrival order     +-----------+
//	                                                      Handler.Handle, then write
//
// A reader goroutine reads ahead up to MaxQueuedRequests decoded requests
// while one serving goroutine handles them strictly one at a time, in
// arrival order, and writes each response before handling the next request.
// So responses leave in request order, as Kafka guarantees, and a client can
// pipeline. A Response with NoResponse (acks=0 produce) writes nothing. A
// Msg response is encoded into a pooled buffer and written with one Write; a
// Body response (e.g. fetch data streamed from segment files) gets the size
// 4 + header + Body.Size() and then Body.WriteTo on a buffered writer whose
// ReadFrom reaches the TCP connection's ReadFrom (sendfile).
//
// A frame that fails to decode closes the connection when the serving
// goroutine reaches it, i.e. after the responses to the requests before it
// were written. A handler error or panic closes the connection too; a panic
// is logged with its API key and version and never takes the process down.
// Other connections are not affected.
//
// # Throttling and connection limits
//
// A Response with Throttle (a violated client quota, KIP-219) is written at
// once; then the connection is muted for that long: neither loop reads or
// handles its next request until the time passes (other connections are not
// affected). Server.Admit, when set (Kafka's ConnectionQuotas), is asked
// about every accepted connection before it is served and may make the
// accept loop wait for a slot; a refused connection is closed at once, or
// after the delay of a ConnThrottled error. Server.Release is told when an
// admitted connection closed; CloseLeastRecent closes the connection whose
// last request is the oldest.
//
// # Authentication
//
// A listener's Server.Security (auth.go, auth_conn.go; package security
// builds it) adds TLS and SASL: the TLS handshake runs on the connection's
// reader goroutine before anything is read; on a SASL listener the reader
// then runs the exchange one frame at a time, each at most
// sasl.server.max.receive.size (SASLAuthenticator.MaxReceiveSize) and
// checked before allocating: ApiVersions (answered by the Handler),
// SaslHandshake, SaslAuthenticate (or raw size-prefixed tokens after
// SaslHandshake v0) until the mechanism is done. Any other request closes
// the connection. A failure is answered with SASL_AUTHENTICATION_FAILED (or
// UNSUPPORTED_SASL_MECHANISM) after FailedAuthDelay, then the connection
// closes. Only then do the reader and processor loops start, and every
// Request carries the connection's Principal. With a session lifetime
// (connections.max.reauth.ms or an expiring credential, KIP-368) the
// processor serves a SaslHandshake as the start of a re-authentication and
// closes a connection whose session expired at its next request.
//
// On a TLS connection the zero-copy path falls back to copying: the
// response writer exposes no file descriptor, so record bytes go through
// the TLS record layer.
//
// # Shutdown
//
// Server.Shutdown works like net/http's: it closes the listeners, stops
// reading new requests (it still reads those already in the socket buffer,
// with non-blocking reads), lets the queued and in-flight ones finish and
// their responses be written, closes each connection once it is idle, and
// waits for all of them (or for its context, after which it closes what is
// left and cancels the handlers' contexts).
//
// # Client
//
// Dial opens a connection (with ClientOptions.TLS, a TLS handshake that
// verifies the dialled host) and sends ApiVersions at kmsg's newest version
// with ClientSoftwareName/Version; a server that answers UNSUPPORTED_VERSION
// is asked again at the version it names (KIP-511). Request then uses
// min(kmsg max, server max) for each API. Requests from many goroutines are
// pipelined on the one connection: each gets the next correlation id and
// its response is matched, in order, by that id. A failed connection fails
// every waiting request and the Client; callers dial again. With
// ClientOptions.SASL the client authenticates after ApiVersions
// (SaslHandshake v1, SaslAuthenticate); when the server gives a session
// lifetime, Err reports ErrReauthDue at 85% of it so its owner dials a new
// connection instead of re-authenticating this one.
package protocol
