package security_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security"
	"github.com/kgo-broker/kgo-broker/security/securitytest"
)

// recorder is a tiny Kafka server: ApiVersions and Metadata, recording the
// principal of each Metadata request.
type recorder struct {
	mu         sync.Mutex
	principals []protocol.Principal
}

func (r *recorder) Handle(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
	switch m := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := m.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range [][3]int16{{18, 0, 3}, {17, 0, 1}, {36, 0, 2}, {3, 0, 12}} {
			ak := kmsg.NewApiVersionsResponseApiKey()
			ak.ApiKey, ak.MinVersion, ak.MaxVersion = k[0], k[1], k[2]
			resp.ApiKeys = append(resp.ApiKeys, ak)
		}
		return protocol.Response{Msg: resp}, nil
	case *kmsg.MetadataRequest:
		r.mu.Lock()
		r.principals = append(r.principals, req.Principal)
		r.mu.Unlock()
		return protocol.Response{Msg: m.ResponseKind()}, nil
	case *kmsg.SASLHandshakeRequest:
		resp := m.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{}, errors.New("unexpected request")
}

func (r *recorder) last() protocol.Principal {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.principals) == 0 {
		return protocol.Principal{}
	}
	return r.principals[len(r.principals)-1]
}

// serve starts a Server for a listener built from props.
func serve(t *testing.T, proto string, props security.MapProps, scram security.ScramCredentials) (string, *recorder, *security.Listener) {
	t.Helper()
	ls, err := security.NewListener(security.ListenerConfig{Name: "TEST", SecurityProtocol: proto, Props: props, Scram: scram})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv := &protocol.Server{Handler: rec, ListenerName: "TEST", Security: ls.Server}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), rec, ls
}

// metadata connects a franz-go client with opts and sends one Metadata.
func metadata(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second), kgo.DialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

type pki struct {
	ca             *securitytest.CA
	server, client *securitytest.Files
	clientCert     *securitytest.Cert
	dir            string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	ca, err := securitytest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ca.Localhost("broker")
	if err != nil {
		t.Fatal(err)
	}
	sf, err := sc.Write(dir, "server", ca)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := ca.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"clients"}}, securitytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := cc.Write(dir, "client", ca)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, server: sf, client: cf, clientCert: cc, dir: dir}
}

func (p *pki) clientTLS(t *testing.T, withCert bool) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if withCert {
		c, err := tls.LoadX509KeyPair(p.client.CertPEM, p.client.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func TestSSLKeystoreTypes(t *testing.T) {
	p := newPKI(t)
	cases := map[string]security.MapProps{
		"PEM file": {"ssl.keystore.type": "PEM", "ssl.keystore.location": p.server.KeystorePEM},
		"PEM inline": {"ssl.keystore.type": "PEM", "ssl.keystore.key": mustRead(t, p.server.KeyPEM),
			"ssl.keystore.certificate.chain": mustRead(t, p.server.CertPEM)},
		"PKCS12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.server.KeystoreP12, "ssl.keystore.password": securitytest.Password},
		"JKS":    {"ssl.keystore.location": p.server.KeystoreJKS, "ssl.keystore.password": securitytest.Password, "ssl.key.password": securitytest.Password},
	}
	for name, props := range cases {
		t.Run(name, func(t *testing.T) {
			addr, rec, _ := serve(t, "SSL", props, nil)
			if err := metadata(t, addr, kgo.DialTLSConfig(p.clientTLS(t, false))); err != nil {
				t.Fatal(err)
			}
			if got := rec.last(); got != protocol.Anonymous {
				t.Fatalf("principal %v, want User:ANONYMOUS (no client certificate)", got)
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMutualTLSPrincipal(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		rules, want string
		truststore  map[string]string
	}{
		{"DEFAULT", "CN=alice,OU=clients", map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": p.server.TruststorePEM}},
		{"RULE:^CN=([^,]*),OU=clients$/$1/U,DEFAULT", "ALICE", map[string]string{"ssl.truststore.location": p.server.TruststoreJKS, "ssl.truststore.password": securitytest.Password}},
		{"RULE:^CN=(.*?),.*$/$1/", "alice", map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.server.TruststoreP12, "ssl.truststore.password": securitytest.Password}},
	} {
		props := security.MapProps{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.server.KeystorePEM,
			"listener.name.test.ssl.client.auth": "required", "ssl.principal.mapping.rules": tc.rules}
		for k, v := range tc.truststore {
			props[k] = v
		}
		addr, rec, _ := serve(t, "SSL", props, nil)
		if err := metadata(t, addr, kgo.DialTLSConfig(p.clientTLS(t, true))); err != nil {
			t.Fatal(err)
		}
		if got := rec.last(); got.String() != "User:"+tc.want {
			t.Fatalf("rules %s: principal %v, want User:%s", tc.rules, got, tc.want)
		}
		// Required: no certificate, no connection.
		if err := metadata(t, addr, kgo.DialTLSConfig(p.clientTLS(t, false))); err == nil {
			t.Fatal("a client without a certificate was served with ssl.client.auth=required")
		}
	}
}

func TestTLSGarbageAndUntrusted(t *testing.T) {
	p := newPKI(t)
	addr, rec, _ := serve(t, "SSL", security.MapProps{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.server.KeystorePEM,
		"ssl.client.auth": "required", "ssl.truststore.type": "PEM", "ssl.truststore.location": p.server.TruststorePEM}, nil)
	// Garbage instead of a ClientHello: the server closes the connection.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("\x00\x00\x00\x10garbage garbage garbage"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 512)); err == nil {
		// an alert may come first; the next read must end the connection
		if _, err := c.Read(make([]byte, 512)); err == nil {
			t.Fatal("connection still open after a garbage handshake")
		}
	}
	c.Close()
	// A client certificate from another CA, and an expired one.
	other, _ := securitytest.NewCA("other-ca")
	oc, _ := other.Issue(pkix.Name{CommonName: "mallory"}, securitytest.Options{})
	expired, _ := p.ca.Issue(pkix.Name{CommonName: "old"}, securitytest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	for _, bad := range []*securitytest.Cert{oc, expired} {
		cfg := p.clientTLS(t, false)
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{bad.Cert.Raw}, PrivateKey: bad.Key}}
		if err := metadata(t, addr, kgo.DialTLSConfig(cfg)); err == nil {
			t.Fatalf("certificate %s was accepted", bad.Cert.Subject)
		}
	}
	// The server still serves a good client.
	if err := metadata(t, addr, kgo.DialTLSConfig(p.clientTLS(t, true))); err != nil {
		t.Fatal(err)
	}
	if rec.last().Name != "CN=alice,OU=clients" {
		t.Fatalf("principal %v", rec.last())
	}
}

const plainJaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

func TestSASLPlain(t *testing.T) {
	addr, rec, _ := serve(t, "SASL_PLAINTEXT", security.MapProps{"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.test.plain.sasl.jaas.config": plainJaas}, nil)
	if err := metadata(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().String(); got != "User:alice" {
		t.Fatalf("principal %s", got)
	}
	err := metadata(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "Authentication failed: Invalid username or password") {
		t.Fatalf("wrong password: %v", err)
	}
	err = metadata(t, addr, kgo.SASL(plain.Auth{User: "nobody", Pass: "x"}.AsMechanism()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("unknown user: %v", err)
	}
	// Mechanism not enabled.
	err = metadata(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "x"}.AsSha256Mechanism()))
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("SCRAM on a PLAIN listener: %v", err)
	}
	// No SASL at all: a Metadata before authentication closes the
	// connection.
	if err := metadata(t, addr); err == nil {
		t.Fatal("unauthenticated Metadata was served")
	}
}

func scramStore(t *testing.T, users map[string]string, iterations int32) security.ScramCredentials {
	creds := map[[2]string]security.ScramCredential{}
	for u, p := range users {
		for _, m := range []security.ScramMechanism{security.ScramSHA256, security.ScramSHA512} {
			c, err := m.NewCredential(p, iterations)
			if err != nil {
				t.Fatal(err)
			}
			creds[[2]string{u, m.Name}] = c
		}
	}
	return func(user string, mech int8) (security.ScramCredential, bool) {
		m, _ := security.ScramMechanismByType(mech)
		c, ok := creds[[2]string{user, m.Name}]
		return c, ok
	}
}

func TestSASLScram(t *testing.T) {
	props := security.MapProps{"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.test.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.test.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`}
	addr, rec, _ := serve(t, "SASL_PLAINTEXT", props, scramStore(t, map[string]string{"alice": "alice-secret"}, 4096))
	for _, m := range []sasl.Mechanism{scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()} {
		if err := metadata(t, addr, kgo.SASL(m)); err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if got := rec.last().String(); got != "User:alice" {
			t.Fatalf("principal %s", got)
		}
	}
	err := metadata(t, addr, kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()))
	want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), want) {
		t.Fatalf("wrong password: %v", err)
	}
	// Too few iterations in the stored credential are refused too.
	addr2, _, _ := serve(t, "SASL_PLAINTEXT", props, scramStore(t, map[string]string{"bob": "pw"}, 1000))
	if err := metadata(t, addr2, kgo.SASL(scram.Auth{User: "bob", Pass: "pw"}.AsSha256Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("1000 iterations: %v", err)
	}
}

func TestSASLOAuthBearer(t *testing.T) {
	dir := t.TempDir()
	iss, err := securitytest.NewIssuer("https://issuer.test", "k1")
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "jwks.json")
	os.WriteFile(jwks, iss.JWKS(), 0o600)
	props := security.MapProps{"sasl.enabled.mechanisms": "OAUTHBEARER",
		"listener.name.test.oauthbearer.sasl.jaas.config":                   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"listener.name.test.oauthbearer.sasl.server.callback.handler.class": security.OAuthBearerValidatorCallbackHandler,
		"sasl.oauthbearer.jwks.endpoint.url":                                "file://" + jwks,
		"sasl.oauthbearer.expected.audience":                                "kafka",
		"sasl.oauthbearer.expected.issuer":                                  "https://issuer.test"}
	addr, rec, _ := serve(t, "SASL_PLAINTEXT", props, nil)
	tok := func(tk string) kgo.Opt {
		return kgo.SASL(oauth.Auth{Token: tk}.AsMechanism())
	}
	good, _ := iss.Token("carol", "kafka", time.Hour)
	if err := metadata(t, addr, tok(good)); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().String(); got != "User:carol" {
		t.Fatalf("principal %s", got)
	}
	other, _ := securitytest.NewIssuer("https://issuer.test", "k1")
	forged, _ := other.Token("carol", "kafka", time.Hour)
	expired, _ := iss.Token("carol", "kafka", -time.Hour)
	wrongAud, _ := iss.Token("carol", "other", time.Hour)
	unsigned := "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYXJvbCIsImV4cCI6OTk5OTk5OTk5OX0."
	for name, bad := range map[string]string{"forged": forged, "expired": expired, "audience": wrongAud, "unsigned": unsigned, "garbage": "abc"} {
		if err := metadata(t, addr, tok(bad)); err == nil {
			t.Fatalf("%s token accepted", name)
		}
	}
	// Fail closed: OAUTHBEARER without a validator does not start.
	delete(props, "listener.name.test.oauthbearer.sasl.server.callback.handler.class")
	if _, err := security.NewListener(security.ListenerConfig{Name: "TEST", SecurityProtocol: "SASL_PLAINTEXT", Props: props}); err == nil ||
		!strings.Contains(err.Error(), "no token validator") {
		t.Fatalf("OAUTHBEARER without a validator: %v", err)
	}
}

func TestReauthentication(t *testing.T) {
	addr, rec, _ := serve(t, "SASL_PLAINTEXT", security.MapProps{"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.test.plain.sasl.jaas.config": plainJaas, "connections.max.reauth.ms": "1500"}, nil)
	// franz-go re-authenticates before the session lifetime ends.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
		cancel()
		if err != nil {
			t.Fatalf("request across re-authentication: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if rec.last().String() != "User:alice" {
		t.Fatalf("principal %v", rec.last())
	}
	// A client that does not re-authenticate is disconnected after the
	// lifetime: protocol.Client marks the session due instead.
	c, err := protocol.DialOptions(context.Background(), addr, protocol.ClientOptions{SASL: plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(1600 * time.Millisecond)
	if !errors.Is(c.Err(), protocol.ErrReauthDue) {
		t.Fatalf("client Err after the session lifetime: %v", c.Err())
	}
	if _, err := c.Request(context.Background(), kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("a request after the session expired was served")
	}
}
