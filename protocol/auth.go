package protocol

import (
	"crypto/tls"
	"net"
	"strings"
	"time"
)

// Principal is the authenticated identity of a connection: Kafka's
// KafkaPrincipal (type "User", the name, and whether a delegation token
// authenticated it). Every request of a connection carries it
// (Request.Principal), so that an authorizer can decide on it.
type Principal struct {
	Type               string
	Name               string
	TokenAuthenticated bool
}

// Anonymous is Kafka's KafkaPrincipal.ANONYMOUS: the principal of PLAINTEXT
// connections and of SSL connections without a client certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// String is Kafka's form Type:Name (KafkaPrincipal.toString).
func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsZero reports whether p was never set.
func (p Principal) IsZero() bool { return p.Type == "" && p.Name == "" }

// ParsePrincipal parses Type:Name (SecurityUtils.parseKafkaPrincipal).
func ParsePrincipal(s string) (Principal, bool) {
	t, n, ok := strings.Cut(s, ":")
	if !ok || t == "" {
		return Principal{}, false
	}
	return Principal{Type: t, Name: n}, true
}

// ConnInfo describes a connection to an Authenticator or principal builder.
type ConnInfo struct {
	Listener         string
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	RemoteAddr       net.Addr
	LocalAddr        net.Addr
	// TLS is the state of the finished TLS handshake; nil without TLS.
	TLS *tls.ConnectionState
}

// SASLAuthenticator is the server side of SASL on one listener (Kafka's
// SaslServerAuthenticator with its mechanisms' SaslServers). The Server
// runs the exchange; the authenticator evaluates the tokens.
type SASLAuthenticator interface {
	// Mechanisms are the enabled mechanisms, in sasl.enabled.mechanisms
	// order (the SaslHandshake response lists them).
	Mechanisms() []string
	// MaxReceiveSize is sasl.server.max.receive.size: no frame larger
	// than this is read before the connection is authenticated.
	MaxReceiveSize() int32
	// Start begins an exchange with a mechanism from Mechanisms.
	Start(mechanism string, info ConnInfo) (SASLExchange, error)
	// MaxReauth is connections.max.reauth.ms for a mechanism; 0 means
	// sessions do not expire (unless the credential does).
	MaxReauth(mechanism string) time.Duration
}

// SASLExchange is one server-side SASL exchange (javax.security.sasl's
// SaslServer).
type SASLExchange interface {
	// Step evaluates a client token. It returns the server's answer and
	// whether the exchange is complete. An error fails the
	// authentication; a *SASLError says what the client is told.
	Step(token []byte) (challenge []byte, done bool, err error)
	// Principal is the authenticated principal once Step said done.
	Principal() Principal
	// Expiry is when the credential expires (an OAUTHBEARER token's exp),
	// or the zero time.
	Expiry() time.Time
}

// SASLError fails a SASL exchange. Public messages are sent to the client as
// they are (Kafka's SaslAuthenticationException); others are replaced by
// Kafka's "Authentication failed during authentication due to invalid
// credentials with SASL mechanism M", since they may say whether a user
// exists (SaslServerAuthenticator.handleSaslToken).
type SASLError struct {
	Msg    string
	Public bool
}

func (e *SASLError) Error() string { return e.Msg }

// ServerSecurity is the security of one listener: TLS, SASL and the
// principal of connections without SASL. The zero value is PLAINTEXT.
type ServerSecurity struct {
	// SecurityProtocol names the listener's protocol (ConnInfo).
	SecurityProtocol string
	// TLS returns the TLS config for a new connection (it may change
	// when the keystore is reconfigured); nil means no TLS.
	TLS func() *tls.Config
	// SASL authenticates every connection before other requests; nil
	// means no SASL.
	SASL SASLAuthenticator
	// Principal builds the principal of a connection without SASL (after
	// the TLS handshake: the mapped certificate subject); nil means
	// User:ANONYMOUS. An error closes the connection.
	Principal func(ConnInfo) (Principal, error)
	// FailedAuthDelay is connection.failed.authentication.delay.ms: the
	// answer to a failed authentication and the close wait this long.
	FailedAuthDelay time.Duration
	// Now is the clock of session expiry; nil means time.Now.
	Now func() time.Time
}

func (s *ServerSecurity) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// SessionLifetime is Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs:
// the shorter of connections.max.reauth.ms and the time until the
// credential expires; 0 when neither applies.
func SessionLifetime(now, expiry time.Time, maxReauth time.Duration) time.Duration {
	var d time.Duration
	switch {
	case expiry.IsZero() && maxReauth <= 0:
		return 0
	case expiry.IsZero():
		d = maxReauth
	case maxReauth <= 0:
		d = expiry.Sub(now)
	default:
		d = min(expiry.Sub(now), maxReauth)
	}
	return max(d, 0)
}
