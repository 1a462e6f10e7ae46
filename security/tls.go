package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// SSLSettings are a listener's ssl.* keys (after listener.name.<l>.
// overrides), as Kafka's DefaultSslEngineFactory reads them.
type SSLSettings struct {
	KeystoreType             string // JKS, PKCS12, PEM
	KeystoreLocation         string
	KeystorePassword         string
	KeyPassword              string
	KeystoreKey              string // PEM, inline
	KeystoreCertificateChain string // PEM, inline
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string // PEM, inline
	ClientAuth               string // none, requested, required
	EnabledProtocols         []string
	Protocol                 string
	CipherSuites             []string
	EndpointIdentification   string // "https" or ""
}

// sslSettings reads the ssl.* keys of a listener.
func sslSettings(p Props, listener string, saslSSL bool) SSLSettings {
	g := func(k string) string { v, _ := ListenerGet(p, listener, k); return strings.TrimSpace(v) }
	s := SSLSettings{
		KeystoreType: g("ssl.keystore.type"), KeystoreLocation: g("ssl.keystore.location"),
		KeystorePassword: g("ssl.keystore.password"), KeyPassword: g("ssl.key.password"),
		KeystoreKey: g("ssl.keystore.key"), KeystoreCertificateChain: g("ssl.keystore.certificate.chain"),
		TruststoreType: g("ssl.truststore.type"), TruststoreLocation: g("ssl.truststore.location"),
		TruststorePassword: g("ssl.truststore.password"), TruststoreCertificates: g("ssl.truststore.certificates"),
		ClientAuth: strings.ToLower(g("ssl.client.auth")), EnabledProtocols: splitList(g("ssl.enabled.protocols")),
		Protocol: g("ssl.protocol"), CipherSuites: splitList(g("ssl.cipher.suites")),
		EndpointIdentification: g("ssl.endpoint.identification.algorithm"),
	}
	if saslSSL {
		// ChannelBuilders: on SASL_SSL only the listener-prefixed
		// ssl.client.auth applies.
		if _, ok := p.Get(listenerPrefix(listener) + "ssl.client.auth"); !ok {
			s.ClientAuth = "none"
		}
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// KeyMaterial is a loaded keystore: the certificate chain and its key.
type KeyMaterial struct {
	Cert tls.Certificate
	Leaf *x509.Certificate
}

// LoadKeystore loads the keystore of s: PEM (inline ssl.keystore.key and
// ssl.keystore.certificate.chain, or a file with both), PKCS12 or JKS. It
// returns nil, nil when no keystore is configured.
func LoadKeystore(s SSLSettings) (*KeyMaterial, error) {
	typ := strings.ToUpper(s.KeystoreType)
	if typ == "" {
		typ = "JKS"
	}
	var (
		certs []*x509.Certificate
		key   crypto.PrivateKey
		err   error
	)
	switch {
	case s.KeystoreKey != "" || s.KeystoreCertificateChain != "":
		if typ != "PEM" {
			return nil, fmt.Errorf("Invalid value %s for configuration ssl.keystore.type: ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM", s.KeystoreType)
		}
		if s.KeystoreKey == "" || s.KeystoreCertificateChain == "" {
			return nil, errors.New("SSL key store configs ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
		}
		if s.KeystoreLocation != "" {
			return nil, errors.New("SSL key store PEM configs must not be combined with ssl.keystore.location")
		}
		if certs, err = pemCerts([]byte(s.KeystoreCertificateChain)); err == nil {
			key, err = pemKey([]byte(s.KeystoreKey), s.KeyPassword)
		}
	case s.KeystoreLocation == "":
		return nil, nil
	default:
		data, rerr := os.ReadFile(s.KeystoreLocation)
		if rerr != nil {
			return nil, fmt.Errorf("Failed to load SSL keystore %s of type %s: %w", s.KeystoreLocation, typ, rerr)
		}
		switch typ {
		case "PEM":
			if certs, err = pemCerts(data); err == nil {
				key, err = pemKey(data, s.KeyPassword)
			}
		case "PKCS12":
			var leaf *x509.Certificate
			var chain []*x509.Certificate
			key, leaf, chain, err = pkcs12.DecodeChain(data, s.KeystorePassword)
			if err == nil {
				certs = append([]*x509.Certificate{leaf}, chain...)
			}
		case "JKS":
			certs, key, err = jksKey(data, s.KeystorePassword, s.KeyPassword)
		default:
			err = fmt.Errorf("unsupported keystore type %s (kgo-broker reads JKS, PKCS12 and PEM)", typ)
		}
		if err != nil {
			return nil, fmt.Errorf("Failed to load SSL keystore %s of type %s: %w", s.KeystoreLocation, typ, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to load SSL keystore of type PEM: %w", err)
	}
	if len(certs) == 0 {
		return nil, errors.New("the keystore has no certificate")
	}
	km := &KeyMaterial{Leaf: certs[0]}
	km.Cert.PrivateKey = key
	km.Cert.Leaf = certs[0]
	for _, c := range certs {
		km.Cert.Certificate = append(km.Cert.Certificate, c.Raw)
	}
	if err := checkKeyPair(km); err != nil {
		return nil, err
	}
	return km, nil
}

func checkKeyPair(km *KeyMaterial) error {
	signer, ok := km.Cert.PrivateKey.(crypto.Signer)
	if !ok {
		return errors.New("the keystore's key cannot sign")
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(km.Leaf.PublicKey) {
		return errors.New("the keystore's private key does not match its certificate")
	}
	return nil
}

func jksKey(data []byte, storePassword, keyPassword string) ([]*x509.Certificate, crypto.PrivateKey, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(storePassword)); err != nil {
		return nil, nil, err
	}
	if keyPassword == "" {
		keyPassword = storePassword // Java's KeyManagerFactory uses the store password then
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
		if err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", alias, err)
		}
		var certs []*x509.Certificate
		for _, c := range e.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, nil, err
			}
			certs = append(certs, cert)
		}
		return certs, key, nil
	}
	return nil, nil, errors.New("no private key entry")
}

func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("No certificate entries found in PEM")
	}
	return out, nil
}

// pemKey reads the private key of a PEM keystore: PKCS#8, encrypted with
// ssl.key.password as Kafka's PemStore expects, or unencrypted (PKCS#8,
// PKCS#1 or SEC 1).
func pemKey(data []byte, password string) (crypto.PrivateKey, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("No private key found in PEM")
		}
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the PEM private key is encrypted and ssl.key.password is not set")
			}
			k, err := pkcs8.ParsePKCS8PrivateKey(b.Bytes, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("decrypting the PEM private key with ssl.key.password: %w", err)
			}
			return k, nil
		case "PRIVATE KEY":
			return x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(b.Bytes)
		}
	}
}

// LoadTruststore loads the trusted certificates of s (PEM inline or file,
// PKCS12, JKS); nil, nil when none is configured (the system roots apply).
func LoadTruststore(s SSLSettings) (*x509.CertPool, error) {
	typ := strings.ToUpper(s.TruststoreType)
	if typ == "" {
		typ = "JKS"
	}
	var certs []*x509.Certificate
	var err error
	switch {
	case s.TruststoreCertificates != "":
		if typ != "PEM" {
			return nil, fmt.Errorf("Invalid value %s for configuration ssl.truststore.type: ssl.truststore.certificates needs ssl.truststore.type=PEM", s.TruststoreType)
		}
		if s.TruststoreLocation != "" {
			return nil, errors.New("SSL trust store PEM configs must not be combined with ssl.truststore.location")
		}
		certs, err = pemCerts([]byte(s.TruststoreCertificates))
	case s.TruststoreLocation == "":
		return nil, nil
	default:
		data, rerr := os.ReadFile(s.TruststoreLocation)
		if rerr != nil {
			return nil, fmt.Errorf("Failed to load SSL truststore %s of type %s: %w", s.TruststoreLocation, typ, rerr)
		}
		switch typ {
		case "PEM":
			certs, err = pemCerts(data)
		case "PKCS12":
			certs, err = pkcs12.DecodeTrustStore(data, s.TruststorePassword)
			if err != nil {
				// A keytool PKCS12 store can hold key entries
				// too; their chains are trusted like Java does
				// with a keystore used as truststore.
				if _, leaf, chain, err2 := pkcs12.DecodeChain(data, s.TruststorePassword); err2 == nil {
					certs, err = append([]*x509.Certificate{leaf}, chain...), nil
				}
			}
		case "JKS":
			certs, err = jksTrusted(data, s.TruststorePassword)
		default:
			err = fmt.Errorf("unsupported truststore type %s (kgo-broker reads JKS, PKCS12 and PEM)", typ)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to load SSL truststore %s of type %s: %w", s.TruststoreLocation, typ, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	// A JKS truststore may be read without its password (Java skips the
	// integrity check then); keystore-go needs one, so try it first.
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no trusted certificate entry")
	}
	return out, nil
}

var tlsVersions = map[string]uint16{"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// versions maps ssl.enabled.protocols and ssl.protocol to Go's range (Go
// cannot leave holes: the lowest and highest listed bound it).
func (s SSLSettings) versions() (lo, hi uint16, err error) {
	for _, p := range s.EnabledProtocols {
		v, ok := tlsVersions[p]
		if !ok {
			if strings.HasPrefix(p, "SSL") {
				continue // SSLv3/SSLv2Hello: never enabled by Go; Java rejects them too
			}
			return 0, 0, fmt.Errorf("Invalid value %s for configuration ssl.enabled.protocols: unsupported protocol", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		lo, hi = tls.VersionTLS12, tls.VersionTLS13
	}
	if v, ok := tlsVersions[s.Protocol]; ok && v < hi {
		// SSLContext.getInstance("TLSv1.2") enables up to TLSv1.2.
		hi = max(v, lo)
	}
	return lo, hi, nil
}

// cipherSuites maps ssl.cipher.suites (IANA names, as Java uses them; the
// SSL_ prefix of old Java names is accepted) to Go's ids. TLS 1.3 suites
// are accepted and always enabled (Go does not make them configurable).
func (s SSLSettings) cipherSuites() ([]uint16, error) {
	if len(s.CipherSuites) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, c := range tls.CipherSuites() {
		byName[c.Name] = c.ID
	}
	for _, c := range tls.InsecureCipherSuites() {
		byName[c.Name] = c.ID
	}
	var out []uint16
	for _, n := range s.CipherSuites {
		name := n
		if strings.HasPrefix(name, "SSL_") {
			name = "TLS_" + name[4:]
		}
		id, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("Invalid value %s for configuration ssl.cipher.suites: Unsupported CipherSuite: %s", n, n)
		}
		if slices.Contains([]uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}, id) {
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

// ServerTLSConfig builds the TLS config of an SSL or SASL_SSL listener.
func ServerTLSConfig(s SSLSettings) (*tls.Config, *KeyMaterial, error) {
	km, err := LoadKeystore(s)
	if err != nil {
		return nil, nil, err
	}
	if km == nil {
		return nil, nil, errors.New("SSL listener needs a keystore: set ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)")
	}
	pool, err := LoadTruststore(s)
	if err != nil {
		return nil, nil, err
	}
	lo, hi, err := s.versions()
	if err != nil {
		return nil, nil, err
	}
	suites, err := s.cipherSuites()
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{km.Cert},
		ClientCAs:    pool,
		MinVersion:   lo,
		MaxVersion:   hi,
		CipherSuites: suites,
	}
	switch s.ClientAuth {
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	default:
		return nil, nil, fmt.Errorf("Invalid value %s for configuration ssl.client.auth: String must be one of: required, requested, none", s.ClientAuth)
	}
	return cfg, km, nil
}

// ClientTLSConfig builds the TLS config of this node's own connections to
// an SSL or SASL_SSL listener (replica fetchers, the controller channel,
// raft): the truststore verifies the server, with its host name unless
// ssl.endpoint.identification.algorithm is empty; the keystore, if any, is
// the client certificate (mTLS).
func ClientTLSConfig(s SSLSettings) (*tls.Config, error) {
	km, err := LoadKeystore(s)
	if err != nil {
		return nil, err
	}
	pool, err := LoadTruststore(s)
	if err != nil {
		return nil, err
	}
	lo, hi, err := s.versions()
	if err != nil {
		return nil, err
	}
	suites, err := s.cipherSuites()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: lo, MaxVersion: hi, CipherSuites: suites}
	if km != nil {
		cfg.Certificates = []tls.Certificate{km.Cert}
	}
	switch strings.ToLower(s.EndpointIdentification) {
	case "https":
	case "":
		// Verify the chain, not the host name (Java's endpoint
		// identification off).
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration ssl.endpoint.identification.algorithm: only https and \"\" are known", s.EndpointIdentification)
	}
	return cfg, nil
}
