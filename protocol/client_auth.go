package protocol

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// ErrReauthDue is returned by a Client whose SASL session is about to end
// (KIP-368): callers dial a new connection, which authenticates again.
var ErrReauthDue = errors.New("protocol: SASL session lifetime reached; reconnect")

// clientTLS wraps nc for ClientOptions.TLS: the server name defaults to the
// dialled host (so that ssl.endpoint.identification.algorithm=https checks
// it), and the handshake completes within ctx.
func clientTLS(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("protocol: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// saslAuthenticate runs SaslHandshake v1 and SaslAuthenticate with the
// mechanism, as Kafka's SaslClientAuthenticator does after ApiVersions.
// A session lifetime from the server (KIP-368) makes the Client report
// ErrReauthDue shortly before it ends, so that its owner reconnects.
func (c *Client) saslAuthenticate(ctx context.Context, addr string, mech sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech.Name()
	resp, err := c.requestAt(ctx, hs, 1)
	if err != nil {
		return err
	}
	hr := resp.(*kmsg.SASLHandshakeResponse)
	if err := kerr.ErrorForCode(hr.ErrorCode); err != nil {
		return fmt.Errorf("SASL mechanism %s (the server offers %v): %w", mech.Name(), hr.SupportedMechanisms, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	sess, out, err := mech.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	version := int16(2)
	if _, max, ok := c.Versions(apiKeySaslAuthenticate); ok && max < version {
		version = max
	}
	for range 16 {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.SASLAuthBytes = out
		resp, err := c.requestAt(ctx, ar, version)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("%w: %s", err, msg)
		}
		done, next, err := sess.Challenge(r.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			if life := time.Duration(r.SessionLifetimeMillis) * time.Millisecond; life > 0 {
				// Reconnect with a margin, as Kafka's clients re-authenticate
				// at 85-95% of the lifetime.
				time.AfterFunc(life*85/100, func() {
					c.mu.Lock()
					c.reauthDue = true
					c.mu.Unlock()
				})
			}
			return nil
		}
		out = next
	}
	return errors.New("protocol: SASL exchange did not finish in 16 steps")
}
