package security

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// Kafka's OAUTHBEARER server callback handlers.
const (
	OAuthBearerValidatorCallbackHandler          = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	OAuthBearerValidatorCallbackHandlerSecured   = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
	OAuthBearerUnsecuredValidatorCallbackHandler = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// TokenValidator validates an OAUTHBEARER token: the principal name, the
// token's expiry, or an error (the token is refused).
type TokenValidator interface {
	Validate(token string) (principal string, expiry time.Time, err error)
}

// JWTSettings are the sasl.oauthbearer.* keys BrokerJwtValidator reads.
type JWTSettings struct {
	JWKSURL    string
	Refresh    time.Duration
	Audience   []string
	Issuer     string
	ClockSkew  time.Duration
	SubClaim   string
	ScopeClaim string
	// HTTP fetches https JWKS; nil means a client with the system roots.
	HTTP *http.Client
	Now  func() time.Time
	Log  *zap.Logger
}

// jwtAlgorithms are the signature algorithms accepted: every asymmetric
// one ("none" and HMAC never; BrokerJwtValidator disallows none, and a JWKS
// publishes public keys).
var jwtAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// JWTValidator is Kafka's BrokerJwtValidator with a refreshing JWKS
// (sasl.oauthbearer.jwks.endpoint.url, file:// or https://). It fails
// closed: a token whose key is not in the key set is refused.
type JWTValidator struct {
	s JWTSettings

	mu      lockrank.Mutex // a leaf: never held while fetching
	keys    *jose.JSONWebKeySet
	fetched time.Time
}

// NewJWTValidator loads the key set once; an unreadable key set fails (Kafka
// does not start a broker whose JWKS cannot be read).
func NewJWTValidator(s JWTSettings) (*JWTValidator, error) {
	if s.JWKSURL == "" {
		return nil, errors.New("OAUTHBEARER with OAuthBearerValidatorCallbackHandler needs sasl.oauthbearer.jwks.endpoint.url")
	}
	u, err := url.Parse(s.JWKSURL)
	if err != nil || (u.Scheme != "file" && u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: the URL must be file:// or https://", s.JWKSURL)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	if s.SubClaim == "" {
		s.SubClaim = "sub"
	}
	if s.ScopeClaim == "" {
		s.ScopeClaim = "scope"
	}
	if s.HTTP == nil {
		s.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	v := &JWTValidator{s: s}
	v.mu.SetRank(lockrank.JWKS)
	keys, err := v.fetch()
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS from %s: %w", s.JWKSURL, err)
	}
	v.keys, v.fetched = keys, s.Now()
	return v, nil
}

func (v *JWTValidator) fetch() (*jose.JSONWebKeySet, error) {
	u, _ := url.Parse(v.s.JWKSURL)
	var data []byte
	var err error
	if u.Scheme == "file" {
		data, err = os.ReadFile(u.Path)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, v.s.JWKSURL, nil); err != nil {
			return nil, err
		}
		var resp *http.Response
		if resp, err = v.s.HTTP.Do(req); err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("HTTP %s", resp.Status)
		}
		data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	if err != nil {
		return nil, err
	}
	var ks jose.JSONWebKeySet
	if err := json.Unmarshal(data, &ks); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var pub []jose.JSONWebKey
	for _, k := range ks.Keys {
		if k.IsPublic() && k.Valid() {
			pub = append(pub, k)
		}
	}
	ks.Keys = pub
	return &ks, nil
}

// keyFor returns the verification keys of kid, refreshing the set when it
// is due (sasl.oauthbearer.jwks.endpoint.refresh.ms) or when kid is unknown
// (RefreshingHttpsJwks: at most every 10 s for unknown ids).
func (v *JWTValidator) keyFor(kid string) []jose.JSONWebKey {
	v.mu.Lock()
	keys, fetched := v.keys, v.fetched
	v.mu.Unlock()
	found := keys.Key(kid)
	if kid == "" {
		found = keys.Keys
	}
	now := v.s.Now()
	due := v.s.Refresh > 0 && now.Sub(fetched) >= v.s.Refresh
	if due || (len(found) == 0 && now.Sub(fetched) >= 10*time.Second) {
		if nk, err := v.fetch(); err != nil {
			v.s.Log.Warn("refreshing the JWKS failed; keeping the keys we have", zap.String("url", v.s.JWKSURL), zap.Error(err))
		} else {
			v.mu.Lock()
			v.keys, v.fetched = nk, now
			v.mu.Unlock()
			if found = nk.Key(kid); kid == "" {
				found = nk.Keys
			}
		}
	}
	return found
}

// Validate implements TokenValidator as BrokerJwtValidator: a signed JWT
// (no "none"), verified with a key of the JWKS, with exp and iat, the
// expected audience and issuer when configured, exp and nbf within the
// clock skew, and the sub claim (sasl.oauthbearer.sub.claim.name) as the
// principal.
func (v *JWTValidator) Validate(token string) (string, time.Time, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("malformed JWT: %w", err)
	}
	if len(tok.Headers) != 1 {
		return "", time.Time{}, errors.New("the JWT must have one signature")
	}
	var claims jwt.Claims
	var all map[string]any
	var verified bool
	for _, k := range v.keyFor(tok.Headers[0].KeyID) {
		if tok.Claims(k.Key, &claims, &all) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return "", time.Time{}, fmt.Errorf("no key of the JWKS verifies the JWT (kid %q)", tok.Headers[0].KeyID)
	}
	if claims.Expiry == nil {
		return "", time.Time{}, errors.New("the JWT has no exp claim")
	}
	if claims.IssuedAt == nil {
		return "", time.Time{}, errors.New("the JWT has no iat claim")
	}
	exp := jwt.Expected{Time: v.s.Now()}
	if v.s.Issuer != "" {
		exp.Issuer = v.s.Issuer
	}
	if len(v.s.Audience) > 0 {
		exp.AnyAudience = v.s.Audience
	}
	if err := claims.ValidateWithLeeway(exp, v.s.ClockSkew); err != nil {
		return "", time.Time{}, err
	}
	sub, _ := all[v.s.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, fmt.Errorf("the JWT has no %s claim", v.s.SubClaim)
	}
	return sub, claims.Expiry.Time(), nil
}

// UnsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler:
// unsigned ("alg":"none") JWTs, for development only. It is used only when
// configured explicitly (see the package doc).
type UnsecuredValidator struct {
	PrincipalClaim string
	RequiredScope  []string
	ScopeClaim     string
	ClockSkew      time.Duration
	Now            func() time.Time
}

// Validate implements TokenValidator.
func (u *UnsecuredValidator) Validate(token string) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", time.Time{}, errors.New("an unsecured JWS has 3 parts")
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", time.Time{}, err
	}
	var h map[string]any
	if err := json.Unmarshal(hdr, &h); err != nil {
		return "", time.Time{}, err
	}
	if alg, _ := h["alg"].(string); alg != "none" {
		return "", time.Time{}, errors.New("an unsecured JWS must have alg none")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", time.Time{}, err
	}
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		return "", time.Time{}, err
	}
	pc := u.PrincipalClaim
	if pc == "" {
		pc = "sub"
	}
	sub, _ := c[pc].(string)
	if sub == "" {
		return "", time.Time{}, fmt.Errorf("the token has no %s claim", pc)
	}
	expf, ok := c["exp"].(float64)
	if !ok {
		return "", time.Time{}, errors.New("the token has no numeric exp claim")
	}
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	expiry := time.UnixMilli(int64(expf * 1000))
	if !now().Before(expiry.Add(u.ClockSkew)) {
		return "", time.Time{}, errors.New("the token expired")
	}
	if iat, ok := c["iat"].(float64); ok && time.UnixMilli(int64(iat*1000)).After(now().Add(u.ClockSkew)) {
		return "", time.Time{}, errors.New("the token's iat is in the future")
	}
	if len(u.RequiredScope) > 0 {
		sc := u.ScopeClaim
		if sc == "" {
			sc = "scope"
		}
		have := map[string]bool{}
		switch s := c[sc].(type) {
		case string:
			for _, x := range strings.Fields(s) {
				have[x] = true
			}
		case []any:
			for _, x := range s {
				if xs, ok := x.(string); ok {
					have[xs] = true
				}
			}
		}
		for _, r := range u.RequiredScope {
			if !have[r] {
				return "", time.Time{}, fmt.Errorf("the token lacks scope %s", r)
			}
		}
	}
	return sub, expiry, nil
}

// The OAUTHBEARER client initial response (RFC 7628, Kafka's
// OAuthBearerClientInitialResponse).
var (
	oauthInitialRE = regexp.MustCompile("^n,(?:a=(" + scramSaslName + "))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuthRE    = regexp.MustCompile(`^([\w]+)[ ]+([-_.a-zA-Z0-9]+)$`)
)

// OAuthInitial is a parsed client initial response.
type OAuthInitial struct {
	AuthzID    string
	Token      string
	Extensions map[string]string
}

// ParseOAuthInitial parses an OAUTHBEARER client initial response.
func ParseOAuthInitial(msg []byte) (*OAuthInitial, error) {
	m := oauthInitialRE.FindStringSubmatch(string(msg))
	if m == nil {
		return nil, errors.New("Invalid OAUTHBEARER client first message")
	}
	out := &OAuthInitial{Extensions: map[string]string{}}
	var err error
	if out.AuthzID, err = decodeSaslName(m[1]); err != nil {
		return nil, err
	}
	auth := ""
	for _, kv := range strings.Split(m[2], "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "auth" {
			auth = v
		} else {
			out.Extensions[k] = v
		}
	}
	if auth == "" {
		return nil, errors.New("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuthRE.FindStringSubmatch(auth)
	if am == nil {
		return nil, errors.New("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "bearer") {
		return nil, fmt.Errorf("Invalid scheme in OAUTHBEARER client first message: %s", am[1])
	}
	out.Token = am[2]
	return out, nil
}

// oauthExchange is Kafka's OAuthBearerSaslServer.
type oauthExchange struct {
	v         TokenValidator
	log       *zap.Logger
	errMsg    string
	done      bool
	principal protocol.Principal
	expiry    time.Time
}

// Step implements protocol.SASLExchange.
func (e *oauthExchange) Step(tok []byte) ([]byte, bool, error) {
	if e.done {
		return nil, false, &protocol.SASLError{Msg: "Authentication failed: OAUTHBEARER exchange already complete", Public: true}
	}
	if len(tok) == 1 && tok[0] == 0x01 && e.errMsg != "" {
		// The client acknowledged our error challenge (RFC 7628 3.2.3).
		return nil, false, &protocol.SASLError{Msg: e.errMsg, Public: true}
	}
	if e.errMsg != "" {
		return nil, false, &protocol.SASLError{Msg: e.errMsg, Public: true}
	}
	ir, err := ParseOAuthInitial(tok)
	if err != nil {
		return nil, false, err
	}
	name, expiry, err := e.v.Validate(ir.Token)
	if err != nil {
		e.log.Info("OAUTHBEARER token refused", zap.Error(err))
		// The error travels as a challenge; the client answers %x01
		// and the exchange fails with it.
		e.errMsg = `{"status":"invalid_token"}`
		return []byte(e.errMsg), false, nil
	}
	if ir.AuthzID != "" && ir.AuthzID != name {
		return nil, false, &protocol.SASLError{Public: true, Msg: fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", ir.AuthzID, name)}
	}
	e.done, e.expiry = true, expiry
	e.principal = protocol.Principal{Type: "User", Name: name}
	return []byte{}, true, nil
}

func (e *oauthExchange) Principal() protocol.Principal { return e.principal }
func (e *oauthExchange) Expiry() time.Time             { return e.expiry }
