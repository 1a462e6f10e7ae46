package protocol

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// API keys the authentication phase serves itself.
const (
	apiKeySaslHandshake    = 17
	apiKeySaslAuthenticate = 36
)

// Errors that close a connection during authentication.
var (
	ErrAuthentication = errors.New("protocol: authentication failed")
	// ErrSessionExpired: a request arrived after the SASL session expired
	// (KIP-368) and it does not begin a re-authentication.
	ErrSessionExpired = errors.New("protocol: SASL session expired")
)

// authState is the SASL state of a connection (SaslServerAuthenticator's
// SaslState).
type authState int

const (
	authHandshakeOrVersions authState = iota // ApiVersions or SaslHandshake
	authHandshake                            // SaslHandshake after ApiVersions
	authTokens                               // SaslAuthenticate (or raw tokens after handshake v0)
)

// session is the authenticated state of a connection. The reader goroutine
// owns it during authentication, the serving goroutine afterwards (it starts
// handling only requests queued after authentication finished).
type session struct {
	info      ConnInfo
	principal Principal
	mechanism string
	// expiry is when the session ends (KIP-368), valid when expires.
	expiry  time.Time
	expires bool
	// reauthOK: the client sent SaslAuthenticate v1+, so it can
	// re-authenticate (connectedClientSupportsReauthentication).
	reauthOK bool
	// reauth is the re-authentication exchange under way, if any.
	reauth       SASLExchange
	reauthBadMsg string // the handshake named another mechanism
}

// authenticate runs the TLS handshake and, on a SASL listener, the SASL
// exchange, before any other request is read. It returns false to close the
// connection.
func (c *conn) authenticate() bool {
	sec := &c.srv.Security
	c.sess.info = ConnInfo{Listener: c.srv.ListenerName, SecurityProtocol: sec.SecurityProtocol,
		RemoteAddr: c.nc.RemoteAddr(), LocalAddr: c.nc.LocalAddr()}
	if tc, ok := c.nc.(*tls.Conn); ok {
		c.setIdleDeadline()
		// The idle deadline bounds the handshake; Shutdown's past read
		// deadline and Close's cancelled context end it early.
		if err := tc.HandshakeContext(c.ctx); err != nil {
			c.log.Debug("TLS handshake failed; closing connection", zap.Error(err))
			return false
		}
		st := tc.ConnectionState()
		c.sess.info.TLS = &st
	}
	if sec.SASL == nil {
		c.sess.principal = Anonymous
		if sec.Principal != nil {
			p, err := sec.Principal(c.sess.info)
			if err != nil {
				c.log.Info("building the principal failed; closing connection", zap.Error(err))
				return false
			}
			c.sess.principal = p
		}
		return true
	}
	return c.saslAuthenticate()
}

// readAuthFrame reads one frame of at most max bytes (sasl.server.max.receive.size).
func (c *conn) readAuthFrame(max int32) ([]byte, error) {
	c.setIdleDeadline()
	c.shutdownSeen = false
	// Between frames, Shutdown's past deadline ends an unauthenticated
	// connection at once (there is nothing of it to drain).
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	var sz [4]byte
	if err := c.readFull(sz[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sz[:]))
	if size < 0 || size > max {
		return nil, fmt.Errorf("%w: Failing SASL authentication due to invalid receive size (size = %d larger than %d)", ErrInvalidFrameSize, size, max)
	}
	return readSized(c.readFull, int(size))
}

// saslAuthenticate is SaslServerAuthenticator.authenticate: ApiVersions,
// SaslHandshake, then SaslAuthenticate requests (or, after SaslHandshake v0,
// raw size-prefixed tokens) until the mechanism says done.
func (c *conn) saslAuthenticate() bool {
	sasl := c.srv.Security.SASL
	state := authHandshakeOrVersions
	var ex SASLExchange
	raw := false
	for {
		if c.shutdown.Load() {
			return false
		}
		frame, err := c.readAuthFrame(sasl.MaxReceiveSize())
		if err != nil {
			if errors.Is(err, ErrInvalidFrameSize) {
				c.log.Info("closing connection during SASL authentication", zap.Error(err))
			}
			return false
		}
		if state == authTokens && raw {
			// SaslHandshake v0: the tokens travel without Kafka headers.
			challenge, done, err := ex.Step(frame)
			if err != nil {
				c.log.Info("SASL authentication failed", zap.String("mechanism", c.sess.mechanism), zap.Error(err))
				c.failedAuthWait()
				return false
			}
			if err := c.writeRaw(challenge); err != nil {
				return false
			}
			if done {
				c.completeAuth(ex, false)
				return true
			}
			continue
		}
		req, err := DecodeRequest(frame, c.srv.versions())
		if req != nil && req.Key == apiKeyApiVersions && req.Msg == nil && errors.Is(err, ErrUnsupportedVersion) &&
			state == authHandshakeOrVersions {
			// KIP-511: the client tries again at a version we name.
			if c.writeMsg(req, 0, c.srv.apiVersionsErrorResponse()) != nil {
				return false
			}
			continue
		}
		if err != nil {
			c.srv.logProtocolError(c.log, req, err)
			return false
		}
		req.Listener, req.RemoteAddr, req.Principal = c.srv.ListenerName, c.nc.RemoteAddr(), Anonymous
		c.stamp(req)
		switch {
		case req.Key == apiKeyApiVersions && state == authHandshakeOrVersions:
			resp, err := c.srv.Handler.Handle(c.ctx, req)
			if err != nil || resp.Msg == nil {
				return false
			}
			if c.writeMsg(req, req.Version, resp.Msg) != nil {
				return false
			}
			state = authHandshake
		case req.Key == apiKeySaslHandshake && state != authTokens:
			hs := req.Msg.(*kmsg.SASLHandshakeRequest)
			resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.SupportedMechanisms = sasl.Mechanisms()
			if !contains(resp.SupportedMechanisms, hs.Mechanism) {
				c.log.Info("SASL mechanism requested by client is not supported", zap.String("mechanism", hs.Mechanism))
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
				c.failedAuthWait()
				c.writeMsg(req, req.Version, resp)
				return false
			}
			e, err := sasl.Start(hs.Mechanism, c.sess.info)
			if err != nil {
				c.log.Warn("starting the SASL exchange failed; closing connection", zap.String("mechanism", hs.Mechanism), zap.Error(err))
				return false
			}
			if c.writeMsg(req, req.Version, resp) != nil {
				return false
			}
			ex, raw, state = e, req.Version == 0, authTokens
			c.sess.mechanism = hs.Mechanism
		case req.Key == apiKeySaslAuthenticate && state == authTokens:
			if req.Version > 0 {
				c.sess.reauthOK = true
			}
			done, ok := c.saslAuthenticateStep(req, ex, false)
			if !ok {
				return false
			}
			if done {
				return true
			}
		default:
			// IllegalSaslStateException: "Unexpected Kafka request of
			// type X during SASL handshake."
			c.log.Info("unexpected request during SASL authentication; closing connection",
				zap.String("api", kmsg.NameForKey(req.Key)))
			return false
		}
	}
}

// saslAuthenticateStep serves one SaslAuthenticate request of an initial or a
// re-authentication. It returns whether the exchange completed, and false
// in ok when the connection must close (the error response was written).
func (c *conn) saslAuthenticateStep(req *Request, ex SASLExchange, reauth bool) (done, ok bool) {
	ar := req.Msg.(*kmsg.SASLAuthenticateRequest)
	resp := ar.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	challenge, done, err := ex.Step(ar.SASLAuthBytes)
	if err == nil && done && reauth && ex.Principal() != c.sess.principal {
		p := ex.Principal()
		err = &SASLError{Public: true, Msg: fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s",
			c.sess.principal.Type, c.sess.principal.Name, p.Type, p.Name)}
	}
	if err != nil {
		what := "authentication"
		if reauth {
			what = "re-authentication"
		}
		msg := fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, c.sess.mechanism)
		var se *SASLError
		if errors.As(err, &se) && se.Public {
			msg = se.Msg
		}
		c.log.Info("SASL "+what+" failed", zap.String("mechanism", c.sess.mechanism), zap.Error(err))
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		c.failedAuthWait()
		c.writeMsg(req, req.Version, resp)
		return false, false
	}
	resp.SASLAuthBytes = challenge
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if done {
		resp.SessionLifetimeMillis = c.completeAuth(ex, reauth).Milliseconds()
	}
	if c.writeMsg(req, req.Version, resp) != nil {
		return false, false
	}
	return done, true
}

// completeAuth records a finished exchange and returns the session lifetime
// sent to the client.
func (c *conn) completeAuth(ex SASLExchange, reauth bool) time.Duration {
	sec := &c.srv.Security
	now := sec.now()
	expiry := ex.Expiry()
	maxReauth := sec.SASL.MaxReauth(c.sess.mechanism)
	life := SessionLifetime(now, expiry, maxReauth)
	c.sess.expires = !expiry.IsZero() || maxReauth > 0
	c.sess.expiry = now.Add(life)
	if !reauth {
		c.sess.principal = ex.Principal()
	}
	c.sess.reauth = nil
	return life
}

// failedAuthWait delays the answer to a failed authentication and the close
// (connection.failed.authentication.delay.ms), so a client that retries in a
// loop cannot make the broker spin; shutdown cuts it short.
func (c *conn) failedAuthWait() {
	d := c.srv.Security.FailedAuthDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.srv.closing:
	case <-c.ctx.Done():
	}
}

// writeRaw writes a size-prefixed raw SASL token (SaslHandshake v0).
func (c *conn) writeRaw(token []byte) error {
	buf := make([]byte, 4, 4+len(token))
	binary.BigEndian.PutUint32(buf, uint32(len(token)))
	buf = append(buf, token...)
	c.setWriteDeadline()
	_, err := c.nc.Write(buf)
	return err
}

// checkSession runs on the serving goroutine before a request of an
// authenticated SASL connection is handled: it serves re-authentication
// (KIP-368) and closes a connection whose session expired. handled says the
// request was answered here; ok false closes the connection.
func (c *conn) checkSession(req *Request) (handled, ok bool) {
	sasl := c.srv.Security.SASL
	if sasl == nil {
		return false, true
	}
	s := &c.sess
	if s.reauth != nil || s.reauthBadMsg != "" {
		if req.Key != apiKeySaslAuthenticate {
			c.log.Info("unexpected request during SASL re-authentication; closing connection", zap.String("api", kmsg.NameForKey(req.Key)))
			return true, false
		}
		if s.reauthBadMsg != "" {
			c.log.Info("SASL re-authentication failed", zap.String("reason", s.reauthBadMsg))
			return true, false
		}
		done, ok := c.saslAuthenticateStep(req, s.reauth, true)
		if done {
			s.reauth = nil
		}
		return true, ok
	}
	if req.Key == apiKeySaslHandshake && s.expires && s.reauthOK {
		// maybeBeginServerReauthentication.
		hs := req.Msg.(*kmsg.SASLHandshakeRequest)
		resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = sasl.Mechanisms()
		if !contains(resp.SupportedMechanisms, hs.Mechanism) {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			c.writeMsg(req, req.Version, resp)
			return true, false
		}
		if hs.Mechanism != s.mechanism {
			s.reauthBadMsg = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
				hs.Mechanism, s.mechanism)
		} else {
			e, err := sasl.Start(hs.Mechanism, s.info)
			if err != nil {
				return true, false
			}
			s.reauth = e
		}
		return true, c.writeMsg(req, req.Version, resp) == nil
	}
	if s.expires && !c.srv.Security.now().Before(s.expiry) {
		c.log.Debug("disconnecting expired SASL session", zap.String("principal", s.principal.String()),
			zap.String("api", kmsg.NameForKey(req.Key)))
		return true, false
	}
	return false, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
