package security

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// DefaultPrincipalBuilder is the only principal.builder.class kgo-broker
// serves (Kafka's default).
const DefaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

// ListenerConfig is what a listener's security is built from.
type ListenerConfig struct {
	Name             string // the listener name (any case)
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	Props            Props
	// Scram looks up SCRAM credentials (the metadata image).
	Scram ScramCredentials
	// JaasFile holds the sections of the JAAS file named by
	// -Djava.security.auth.login.config in KAFKA_OPTS, if any.
	JaasFile map[string][]LoginModule
	Logger   *zap.Logger
	Now      func() time.Time
}

// Listener is the server-side security of one listener. Server is handed
// to protocol.Server; Reload swaps the TLS keystore for new connections.
type Listener struct {
	Server protocol.ServerSecurity

	cfg     ListenerConfig
	tls     atomic.Pointer[tls.Config]
	leaf    atomic.Pointer[KeyMaterial]
	current atomic.Pointer[SSLSettings]
}

// NewListener builds a listener's security from its settings, failing as
// Kafka fails at startup on a bad keystore, an unknown mechanism or a
// missing JAAS entry.
func NewListener(lc ListenerConfig) (*Listener, error) {
	if lc.Logger == nil {
		lc.Logger = zap.NewNop()
	}
	l := &Listener{cfg: lc}
	proto := strings.ToUpper(lc.SecurityProtocol)
	l.Server.SecurityProtocol = proto
	l.Server.Now = lc.Now
	if d, ok := lc.Props.Get("connection.failed.authentication.delay.ms"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(d)); err == nil {
			l.Server.FailedAuthDelay = time.Duration(n) * time.Millisecond
		}
	}
	if pb, ok := ListenerGet(lc.Props, lc.Name, "principal.builder.class"); ok && strings.TrimSpace(pb) != "" && strings.TrimSpace(pb) != DefaultPrincipalBuilder {
		return nil, fmt.Errorf("principal.builder.class %s: kgo-broker builds principals as %s only", pb, DefaultPrincipalBuilder)
	}
	switch proto {
	case "PLAINTEXT":
		return l, nil
	case "SSL", "SASL_SSL":
		s := sslSettings(lc.Props, lc.Name, proto == "SASL_SSL")
		cfg, km, err := ServerTLSConfig(s)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", lc.Name, err)
		}
		l.tls.Store(cfg)
		l.leaf.Store(km)
		l.current.Store(&s)
		l.Server.TLS = l.tls.Load
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("listener %s: unknown security protocol %s", lc.Name, lc.SecurityProtocol)
	}
	if proto == "SSL" {
		rules, _ := ListenerGet(lc.Props, lc.Name, "ssl.principal.mapping.rules")
		mapper, err := NewPrincipalMapper(rules)
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
		}
		l.Server.Principal = func(ci protocol.ConnInfo) (protocol.Principal, error) {
			return SSLPrincipal(ci, mapper)
		}
		return l, nil
	}
	srv, err := newSASLServer(lc)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", lc.Name, err)
	}
	l.Server.SASL = srv
	return l, nil
}

// SSLPrincipal is DefaultKafkaPrincipalBuilder for an SSL connection: the
// mapped subject of a verified client certificate, else User:ANONYMOUS.
func SSLPrincipal(ci protocol.ConnInfo, m *PrincipalMapper) (protocol.Principal, error) {
	if ci.TLS == nil || len(ci.TLS.PeerCertificates) == 0 {
		return protocol.Anonymous, nil
	}
	name, err := m.Name(SubjectDN(ci.TLS.PeerCertificates[0]))
	if err != nil {
		return protocol.Principal{}, err
	}
	return protocol.Principal{Type: "User", Name: name}, nil
}

// Reload rebuilds the TLS config from new settings (a dynamic
// listener.name.<l>.ssl.* change): new connections use the new keystore,
// open ones keep theirs. It reports whether anything changed. As Kafka's
// SslFactory.validateReconfiguration, the new certificate must keep the
// subject unless ssl.allow.dn.changes, and its SANs unless
// ssl.allow.san.changes.
func (l *Listener) Reload(p Props) (bool, error) {
	if l.Server.TLS == nil {
		return false, nil
	}
	s := sslSettings(p, l.cfg.Name, l.Server.SecurityProtocol == "SASL_SSL")
	old := l.current.Load()
	if old != nil && equalSettings(*old, s) && !keystoreFileChanged(s, l.leaf.Load()) {
		return false, nil
	}
	cfg, km, err := ServerTLSConfig(s)
	if err != nil {
		return false, err
	}
	if prev := l.leaf.Load(); prev != nil {
		if !bytes.Equal(prev.Leaf.RawSubject, km.Leaf.RawSubject) && !boolProp(p, l.cfg.Name, "ssl.allow.dn.changes") {
			return false, fmt.Errorf("Keystore DistinguishedName does not match: existing={%s}, new={%s}", SubjectDN(prev.Leaf), SubjectDN(km.Leaf))
		}
		if !sameSANs(prev, km) && !boolProp(p, l.cfg.Name, "ssl.allow.san.changes") {
			return false, fmt.Errorf("Keystore SubjectAltNames do not match: existing=%v, new=%v", sans(prev), sans(km))
		}
	}
	l.tls.Store(cfg)
	l.leaf.Store(km)
	l.current.Store(&s)
	return true, nil
}

func equalSettings(a, b SSLSettings) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// keystoreFileChanged reports whether the keystore file now holds another
// certificate than the one in use (a changed file under an unchanged path).
func keystoreFileChanged(s SSLSettings, km *KeyMaterial) bool {
	if km == nil || s.KeystoreLocation == "" {
		return false
	}
	n, err := LoadKeystore(s)
	return err == nil && n != nil && !bytes.Equal(n.Leaf.Raw, km.Leaf.Raw)
}

func boolProp(p Props, listener, key string) bool {
	v, _ := ListenerGet(p, listener, key)
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

func sans(km *KeyMaterial) []string {
	var out []string
	out = append(out, km.Leaf.DNSNames...)
	for _, ip := range km.Leaf.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

func sameSANs(a, b *KeyMaterial) bool { return fmt.Sprint(sans(a)) == fmt.Sprint(sans(b)) }

// saslServer implements protocol.SASLAuthenticator.
type saslServer struct {
	mechanisms []string
	maxReceive int32
	reauth     map[string]time.Duration
	plain      *plainServer
	scram      ScramCredentials
	oauth      TokenValidator
	log        *zap.Logger
}

// serverJaas finds the JAAS login module of a mechanism on a listener:
// listener.name.<l>.<mechanism>.sasl.jaas.config, else the JAAS file's
// <listener>.KafkaServer or KafkaServer section (JaasContext.loadServerContext;
// the unprefixed sasl.jaas.config is ignored on the server, as Kafka does).
func serverJaas(lc ListenerConfig, mechanism, class string) (LoginModule, error) {
	key := listenerPrefix(lc.Name) + strings.ToLower(mechanism) + ".sasl.jaas.config"
	if v, ok := lc.Props.Get(key); ok && strings.TrimSpace(v) != "" {
		m, err := ParseSingleJaasConfig(key, v)
		if err != nil {
			return m, fmt.Errorf("%s: %w", key, err)
		}
		return m, nil
	}
	for _, section := range []string{strings.ToLower(lc.Name) + ".KafkaServer", "KafkaServer"} {
		mods, ok := lc.JaasFile[section]
		if !ok {
			continue
		}
		for _, m := range mods {
			if m.Class == class {
				return m, nil
			}
		}
		if len(mods) > 0 {
			return mods[0], nil
		}
	}
	return LoginModule{}, fmt.Errorf("Could not find a '%s.KafkaServer' or 'KafkaServer' entry in the JAAS configuration for mechanism %s: set %s (System property 'java.security.auth.login.config' is not set)",
		strings.ToLower(lc.Name), mechanism, key)
}

func loginModuleFor(mechanism string) string {
	switch {
	case mechanism == "PLAIN":
		return PlainLoginModule
	case strings.HasPrefix(mechanism, "SCRAM-"):
		return ScramLoginModule
	case mechanism == "OAUTHBEARER":
		return OAuthBearerLoginModule
	}
	return ""
}

func newSASLServer(lc ListenerConfig) (*saslServer, error) {
	s := &saslServer{reauth: map[string]time.Duration{}, log: lc.Logger, scram: lc.Scram}
	mechs, _ := ListenerGet(lc.Props, lc.Name, "sasl.enabled.mechanisms")
	s.mechanisms = splitList(mechs)
	if len(s.mechanisms) == 0 {
		return nil, errors.New("No SASL mechanisms are enabled (sasl.enabled.mechanisms)")
	}
	s.maxReceive = 524288
	if v, ok := ListenerGet(lc.Props, lc.Name, "sasl.server.max.receive.size"); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n > 0 {
			s.maxReceive = int32(n)
		}
	}
	for _, mech := range s.mechanisms {
		if v, ok := mechGet(lc.Props, lc.Name, mech, "connections.max.reauth.ms"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
				s.reauth[mech] = time.Duration(n) * time.Millisecond
			}
		}
		class := loginModuleFor(mech)
		if class == "" {
			if mech == "GSSAPI" {
				return nil, errors.New("SASL mechanism GSSAPI (Kerberos) is not supported by kgo-broker: set sasl.enabled.mechanisms to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (its default is GSSAPI)")
			}
			return nil, fmt.Errorf("SASL mechanism %s is not supported (kgo-broker serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", mech)
		}
		jaas, err := serverJaas(lc, mech, class)
		if err != nil {
			return nil, err
		}
		cbKey := listenerPrefix(lc.Name) + strings.ToLower(mech) + ".sasl.server.callback.handler.class"
		cb, _ := lc.Props.Get(cbKey)
		cb = strings.TrimSpace(cb)
		switch mech {
		case "PLAIN":
			if cb != "" {
				return nil, fmt.Errorf("%s=%s: kgo-broker cannot load callback handler classes; PLAIN users come from the user_<name> options of PlainLoginModule", cbKey, cb)
			}
			s.plain = newPlainServer(jaas)
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			if cb != "" {
				return nil, fmt.Errorf("%s=%s: kgo-broker cannot load callback handler classes; SCRAM credentials come from the metadata log", cbKey, cb)
			}
			if s.scram == nil {
				s.scram = func(string, int8) (ScramCredential, bool) { return ScramCredential{}, false }
			}
		case "OAUTHBEARER":
			v, err := newOAuthValidator(lc, cbKey, cb, jaas)
			if err != nil {
				return nil, err
			}
			s.oauth = v
		}
	}
	return s, nil
}

// newOAuthValidator picks the OAUTHBEARER validator. Kafka falls back to the
// unsecured validator when no callback handler is configured; kgo-broker
// fails closed instead: it uses the unsecured one only when it is named, or
// when the JAAS entry has the unsecured options (unsecuredLogin* /
// unsecuredValidator*), which only make sense for it.
func newOAuthValidator(lc ListenerConfig, cbKey, cb string, jaas LoginModule) (TokenValidator, error) {
	g := func(k string) string {
		v, _ := mechGet(lc.Props, lc.Name, "OAUTHBEARER", k)
		return strings.TrimSpace(v)
	}
	unsecuredOpts := false
	for k := range jaas.Options {
		if strings.HasPrefix(k, "unsecuredLogin") || strings.HasPrefix(k, "unsecuredValidator") {
			unsecuredOpts = true
		}
	}
	switch {
	case cb == OAuthBearerValidatorCallbackHandler || cb == OAuthBearerValidatorCallbackHandlerSecured:
		st := JWTSettings{JWKSURL: g("sasl.oauthbearer.jwks.endpoint.url"), Issuer: g("sasl.oauthbearer.expected.issuer"),
			Audience: splitList(g("sasl.oauthbearer.expected.audience")), SubClaim: g("sasl.oauthbearer.sub.claim.name"),
			ScopeClaim: g("sasl.oauthbearer.scope.claim.name"), Log: lc.Logger, Now: lc.Now}
		if n, err := strconv.ParseInt(g("sasl.oauthbearer.jwks.endpoint.refresh.ms"), 10, 64); err == nil {
			st.Refresh = time.Duration(n) * time.Millisecond
		}
		skew := int64(30)
		if n, err := strconv.ParseInt(g("sasl.oauthbearer.clock.skew.seconds"), 10, 64); err == nil {
			skew = n
		}
		st.ClockSkew = time.Duration(skew) * time.Second
		if strings.HasPrefix(st.JWKSURL, "https:") {
			// The listener's truststore verifies the JWKS server
			// (JaasOptionsUtils.createSSLSocketFactory).
			s := sslSettings(lc.Props, lc.Name, false)
			if pool, err := LoadTruststore(s); err != nil {
				return nil, err
			} else if pool != nil {
				st.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			}
		}
		return NewJWTValidator(st)
	case cb == OAuthBearerUnsecuredValidatorCallbackHandler || (cb == "" && unsecuredOpts):
		lc.Logger.Warn("OAUTHBEARER uses the unsecured validator (unsigned tokens): for development only", zap.String("listener", lc.Name))
		u := &UnsecuredValidator{PrincipalClaim: jaas.Options["unsecuredValidatorPrincipalClaimName"],
			ScopeClaim: jaas.Options["unsecuredValidatorScopeClaimName"], Now: lc.Now,
			RequiredScope: strings.Fields(jaas.Options["unsecuredValidatorRequiredScope"])}
		if ms, err := strconv.Atoi(strings.TrimSpace(jaas.Options["unsecuredValidatorAllowableClockSkewMs"])); err == nil && ms > 0 {
			u.ClockSkew = time.Duration(ms) * time.Millisecond
		}
		return u, nil
	case cb == "":
		return nil, fmt.Errorf("OAUTHBEARER is enabled but no token validator is configured: set %s=%s with sasl.oauthbearer.jwks.endpoint.url (kgo-broker does not fall back to the unsecured validator)",
			cbKey, OAuthBearerValidatorCallbackHandler)
	default:
		return nil, fmt.Errorf("%s=%s: kgo-broker cannot load callback handler classes (it knows %s and %s)", cbKey, cb,
			OAuthBearerValidatorCallbackHandler, OAuthBearerUnsecuredValidatorCallbackHandler)
	}
}

func (s *saslServer) Mechanisms() []string  { return s.mechanisms }
func (s *saslServer) MaxReceiveSize() int32 { return s.maxReceive }
func (s *saslServer) MaxReauth(m string) time.Duration {
	return s.reauth[m]
}

// Start implements protocol.SASLAuthenticator.
func (s *saslServer) Start(mechanism string, _ protocol.ConnInfo) (protocol.SASLExchange, error) {
	switch mechanism {
	case "PLAIN":
		return &plainExchange{srv: s.plain}, nil
	case "SCRAM-SHA-256":
		return &scramExchange{mech: ScramSHA256, creds: s.scram}, nil
	case "SCRAM-SHA-512":
		return &scramExchange{mech: ScramSHA512, creds: s.scram}, nil
	case "OAUTHBEARER":
		return &oauthExchange{v: s.oauth, log: s.log}, nil
	}
	return nil, fmt.Errorf("mechanism %s is not enabled", mechanism)
}

// ClientConfig is the security of this node's own connections to a
// listener of another node: the protocol of the listener dialled, the SASL
// mechanism (sasl.mechanism.inter.broker.protocol or
// sasl.mechanism.controller.protocol), and the listener's settings.
type ClientConfig struct {
	Listener         string
	SecurityProtocol string
	Mechanism        string
	Props            Props
	JaasFile         map[string][]LoginModule
}

// ClientOptions returns the TLS config and SASL mechanism to dial the
// listener with (nil, nil for PLAINTEXT). As Kafka's inter-broker clients,
// the SASL credentials are the username and password options of the
// listener's server JAAS entry for the mechanism.
func ClientOptions(cc ClientConfig) (*tls.Config, sasl.Mechanism, error) {
	proto := strings.ToUpper(cc.SecurityProtocol)
	var tc *tls.Config
	if proto == "SSL" || proto == "SASL_SSL" {
		s := sslSettings(cc.Props, cc.Listener, false)
		var err error
		if tc, err = ClientTLSConfig(s); err != nil {
			return nil, nil, fmt.Errorf("listener %s (client): %w", cc.Listener, err)
		}
	}
	if proto != "SASL_PLAINTEXT" && proto != "SASL_SSL" {
		return tc, nil, nil
	}
	mech := strings.TrimSpace(cc.Mechanism)
	jaas, err := serverJaas(ListenerConfig{Name: cc.Listener, Props: cc.Props, JaasFile: cc.JaasFile}, mech, loginModuleFor(mech))
	if err != nil {
		return nil, nil, err
	}
	user, pass := jaas.Options["username"], jaas.Options["password"]
	switch mech {
	case "PLAIN":
		return tc, plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return tc, scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return tc, scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	case "GSSAPI":
		return nil, nil, errors.New("the node's own SASL mechanism is GSSAPI (the default of sasl.mechanism.inter.broker.protocol and sasl.mechanism.controller.protocol), which kgo-broker does not support: set it to PLAIN or SCRAM-SHA-256/512")
	}
	return nil, nil, fmt.Errorf("SASL mechanism %s for the node's own connections is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
}
