package security

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// plainServer is Kafka's PlainSaslServer with PlainServerCallbackHandler:
// the users are the user_<name>="<password>" options of the listener's
// PlainLoginModule.
type plainServer struct {
	users map[string]string
}

func newPlainServer(m LoginModule) *plainServer {
	s := &plainServer{users: map[string]string{}}
	for k, v := range m.Options {
		if name, ok := cutPrefix(k, "user_"); ok {
			s.users[name] = v
		}
	}
	return s
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

type plainExchange struct {
	srv       *plainServer
	done      bool
	principal protocol.Principal
}

// Step evaluates the one PLAIN message: [authzid] NUL authcid NUL passwd.
func (e *plainExchange) Step(tok []byte) ([]byte, bool, error) {
	if e.done {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: PLAIN exchange already complete", Public: true}
	}
	parts := bytes.Split(tok, []byte{0})
	if len(parts) != 3 {
		return nil, false, &protocol.SASLError{Public: true,
			Msg: fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))}
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: username not specified", Public: true}
	}
	if len(pass) == 0 {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: password not specified", Public: true}
	}
	want, ok := e.srv.users[user]
	// Compare in constant time whether or not the user exists.
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: Invalid username or password", Public: true}
	}
	if authzid != "" && authzid != user {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: Client requested an authorization id that is different from username", Public: true}
	}
	e.done = true
	e.principal = protocol.Principal{Type: "User", Name: user}
	return []byte{}, true, nil
}

func (e *plainExchange) Principal() protocol.Principal { return e.principal }
func (e *plainExchange) Expiry() time.Time             { return time.Time{} }
