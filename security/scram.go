package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// ScramMechanism is a SCRAM mechanism with Kafka's ScramMechanism type
// (the Mechanism of UserScramCredentialRecord and AlterUserScramCredentials).
type ScramMechanism struct {
	Name          string
	Type          int8
	hash          func() hash.Hash
	MinIterations int32
}

// Kafka's SCRAM mechanisms (ScramMechanism: minimum 4096 iterations).
var (
	ScramSHA256 = ScramMechanism{Name: "SCRAM-SHA-256", Type: 1, hash: sha256.New, MinIterations: 4096}
	ScramSHA512 = ScramMechanism{Name: "SCRAM-SHA-512", Type: 2, hash: sha512.New, MinIterations: 4096}
)

// MaxScramIterations is ScramMechanism's maximum (16384).
const MaxScramIterations = 16384

// ScramMechanismByName returns the mechanism named n.
func ScramMechanismByName(n string) (ScramMechanism, bool) {
	switch n {
	case ScramSHA256.Name:
		return ScramSHA256, true
	case ScramSHA512.Name:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// ScramMechanismByType returns the mechanism of Kafka's type code.
func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	switch t {
	case ScramSHA256.Type:
		return ScramSHA256, true
	case ScramSHA512.Type:
		return ScramSHA512, true
	}
	return ScramMechanism{}, false
}

// ScramCredential is what the server stores (RFC 5802: StoredKey, ServerKey).
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// SaltedPassword is RFC 5802's Hi(password, salt, i) (PBKDF2 with the
// mechanism's HMAC).
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
}

func (m ScramMechanism) hmac(key []byte, s string) []byte {
	h := hmac.New(m.hash, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

func (m ScramMechanism) h(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// CredentialFromSaltedPassword is ScramFormatter.generateCredential from a
// salted password (what AlterUserScramCredentials carries).
func (m ScramMechanism) CredentialFromSaltedPassword(salted, salt []byte, iterations int32) ScramCredential {
	return ScramCredential{
		Salt:       salt,
		StoredKey:  m.h(m.hmac(salted, "Client Key")),
		ServerKey:  m.hmac(salted, "Server Key"),
		Iterations: iterations,
	}
}

// NewCredential makes a credential from a password with a random salt.
func (m ScramMechanism) NewCredential(password string, iterations int32) (ScramCredential, error) {
	salt := make([]byte, 32)
	rand.Read(salt)
	salted, err := m.SaltedPassword(password, salt, int(iterations))
	if err != nil {
		return ScramCredential{}, err
	}
	return m.CredentialFromSaltedPassword(salted, salt, iterations), nil
}

// ScramCredentials looks up a user's credential for a mechanism (the
// metadata image's UserScramCredentialRecords).
type ScramCredentials func(user string, mechanism int8) (ScramCredential, bool)

// The SCRAM message grammar of Kafka's ScramMessages (RFC 5802 section 7).
const (
	scramSaslName   = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+`
	scramReserved   = `(?:m=[\x01-\x2B\x2D-\x7F]+,)?`
	scramBase64     = `(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?`
	scramPrintable  = `[\x21-\x2B\x2D-\x7E]+`
	scramExtensions = `(?:,[\x01-\x2B\x2D-\x3C\x3E-\x7F]+=[\x01-\x2B\x2D-\x7F]+)*`
)

var (
	clientFirstRE = regexp.MustCompile(`^n,(?:a=(` + scramSaslName + `))?,(` + scramReserved + `n=(` + scramSaslName + `),r=(` + scramPrintable + `)(` + scramExtensions + `))$`)
	clientFinalRE = regexp.MustCompile(`^(c=(` + scramBase64 + `),r=(` + scramPrintable + `)(?:` + scramExtensions + `)),p=(` + scramBase64 + `)$`)
)

// ClientFirst is a parsed client-first-message.
type ClientFirst struct {
	AuthzID    string
	User       string
	Nonce      string
	Extensions map[string]string
	Bare       string // client-first-message-bare, for the AuthMessage
}

// ParseClientFirst parses a SCRAM client-first-message (gs2 header "n,"
// only: Kafka supports no channel binding).
func ParseClientFirst(msg []byte) (*ClientFirst, error) {
	m := clientFirstRE.FindStringSubmatch(string(msg))
	if m == nil {
		return nil, fmt.Errorf("Invalid SCRAM client first message format: %q", truncate(msg))
	}
	cf := &ClientFirst{Bare: m[2], Nonce: m[4], Extensions: map[string]string{}}
	var err error
	if cf.AuthzID, err = decodeSaslName(m[1]); err != nil {
		return nil, err
	}
	if cf.User, err = decodeSaslName(m[3]); err != nil {
		return nil, err
	}
	for _, kv := range strings.Split(strings.TrimPrefix(m[5], ","), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			cf.Extensions[k] = v
		}
	}
	return cf, nil
}

// ClientFinal is a parsed client-final-message.
type ClientFinal struct {
	ChannelBinding []byte
	Nonce          string
	Proof          []byte
	WithoutProof   string
}

// ParseClientFinal parses a SCRAM client-final-message.
func ParseClientFinal(msg []byte) (*ClientFinal, error) {
	m := clientFinalRE.FindStringSubmatch(string(msg))
	if m == nil {
		return nil, fmt.Errorf("Invalid SCRAM client final message format: %q", truncate(msg))
	}
	cb, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		return nil, err
	}
	proof, err := base64.StdEncoding.DecodeString(m[4])
	if err != nil {
		return nil, err
	}
	return &ClientFinal{ChannelBinding: cb, Nonce: m[3], Proof: proof, WithoutProof: m[1]}, nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

func decodeSaslName(s string) (string, error) {
	s = strings.ReplaceAll(s, "=2C", ",")
	s = strings.ReplaceAll(s, "=3D", "=")
	return s, nil
}

// scramExchange is Kafka's ScramSaslServer.
type scramExchange struct {
	mech  ScramMechanism
	creds ScramCredentials
	state int // 0 first, 1 final, 2 done, 3 failed

	first       *ClientFirst
	serverFirst string
	nonce       string
	cred        ScramCredential
	principal   protocol.Principal
}

func (e *scramExchange) fail(err error) ([]byte, bool, error) {
	e.state = 3
	return nil, false, err
}

// Step implements protocol.SASLExchange.
func (e *scramExchange) Step(tok []byte) ([]byte, bool, error) {
	switch e.state {
	case 0:
		cf, err := ParseClientFirst(tok)
		if err != nil {
			return e.fail(err)
		}
		if cf.Extensions["tokenauth"] == "true" {
			// Delegation tokens are not issued by kgo-broker.
			return e.fail(fmt.Errorf("Token Authentication failed: Invalid tokenId : %s", cf.User))
		}
		cred, ok := e.creds(cf.User, e.mech.Type)
		if !ok {
			return e.fail(errors.New("Authentication failed: Invalid user credentials"))
		}
		if cf.AuthzID != "" && cf.AuthzID != cf.User {
			return e.fail(&protocol.SASLError{Public: true, Msg: "Authentication failed: Client requested an authorization id that is different from username"})
		}
		if cred.Iterations < e.mech.MinIterations {
			return e.fail(fmt.Errorf("Iterations %d is less than the minimum %d for %s", cred.Iterations, e.mech.MinIterations, e.mech.Name))
		}
		var rnd [24]byte
		rand.Read(rnd[:])
		e.first, e.cred = cf, cred
		e.nonce = cf.Nonce + base64.RawURLEncoding.EncodeToString(rnd[:])
		e.serverFirst = "r=" + e.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
		e.state = 1
		return []byte(e.serverFirst), false, nil
	case 1:
		cf, err := ParseClientFinal(tok)
		if err != nil {
			return e.fail(err)
		}
		if !strings.HasSuffix(cf.Nonce, e.nonce) {
			// The nonce must end with the one this exchange made
			// (CVE-2024-56128), so an old client-final cannot be
			// replayed. Kafka checks endsWith, not equality:
			// librdkafka sends the client nonce before the combined
			// one, and Kafka accepts it.
			return e.fail(errors.New("Invalid client nonce in the final client message."))
		}
		authMessage := e.first.Bare + "," + e.serverFirst + "," + cf.WithoutProof
		sig := e.mech.hmac(e.cred.StoredKey, authMessage)
		if len(cf.Proof) != len(sig) {
			return e.fail(errors.New("Invalid client credentials"))
		}
		clientKey := make([]byte, len(sig))
		for i := range sig {
			clientKey[i] = cf.Proof[i] ^ sig[i]
		}
		if subtle.ConstantTimeCompare(e.mech.h(clientKey), e.cred.StoredKey) != 1 {
			return e.fail(errors.New("Invalid client credentials"))
		}
		e.state = 2
		e.principal = protocol.Principal{Type: "User", Name: e.first.User}
		serverSig := e.mech.hmac(e.cred.ServerKey, authMessage)
		return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
	}
	return e.fail(fmt.Errorf("Unexpected challenge in Sasl server state %d", e.state))
}

func (e *scramExchange) Principal() protocol.Principal { return e.principal }
func (e *scramExchange) Expiry() time.Time             { return time.Time{} }
