package security_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security"
	"github.com/kgo-broker/kgo-broker/security/securitytest"
)

func TestTLSVersionsAndCiphers(t *testing.T) {
	p := newPKI(t)
	base := security.SSLSettings{KeystoreType: "PEM", KeystoreLocation: p.server.KeystorePEM}
	s := base
	s.EnabledProtocols, s.Protocol = []string{"TLSv1.2"}, "TLSv1.2"
	s.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "SSL_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"}
	cfg, _, err := security.ServerTLSConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS12 || len(cfg.CipherSuites) != 2 {
		t.Fatalf("versions %x-%x suites %v", cfg.MinVersion, cfg.MaxVersion, cfg.CipherSuites)
	}
	s = base
	s.CipherSuites = []string{"TLS_NOT_A_SUITE"}
	if _, _, err := security.ServerTLSConfig(s); err == nil || !strings.Contains(err.Error(), "Unsupported CipherSuite") {
		t.Fatalf("unknown suite: %v", err)
	}
	s = base
	s.EnabledProtocols = []string{"TLSv9"}
	if _, _, err := security.ServerTLSConfig(s); err == nil {
		t.Fatal("unknown protocol accepted")
	}
	s = base
	s.KeystoreType, s.KeystoreLocation, s.KeystorePassword = "PKCS12", p.server.KeystoreP12, "wrong"
	if _, _, err := security.ServerTLSConfig(s); err == nil {
		t.Fatal("a wrong keystore password was accepted")
	}
}

// The node's own TLS connections verify the host name unless
// ssl.endpoint.identification.algorithm is empty.
func TestClientEndpointIdentification(t *testing.T) {
	p := newPKI(t)
	// A server certificate for another host name only.
	other, err := p.ca.Issue(pkix.Name{CommonName: "elsewhere"}, securitytest.Options{DNS: []string{"elsewhere.example"}})
	if err != nil {
		t.Fatal(err)
	}
	of, err := other.Write(p.dir, "other", p.ca)
	if err != nil {
		t.Fatal(err)
	}
	addr, _, _ := serve(t, "SSL", security.MapProps{"ssl.keystore.type": "PEM", "ssl.keystore.location": of.KeystorePEM}, nil)
	dial := func(alg string) error {
		props := security.MapProps{"ssl.truststore.type": "PEM", "ssl.truststore.location": p.server.TruststorePEM,
			"ssl.endpoint.identification.algorithm": alg}
		tc, _, err := security.ClientOptions(security.ClientConfig{Listener: "TEST", SecurityProtocol: "SSL", Props: props})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := protocol.DialOptions(ctx, addr, protocol.ClientOptions{TLS: tc})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial("https"); err == nil {
		t.Fatal("host name not verified with https")
	}
	if err := dial(""); err != nil {
		t.Fatalf("chain-only verification: %v", err)
	}
}
