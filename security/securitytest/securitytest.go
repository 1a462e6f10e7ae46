// Package securitytest makes test certificates, keystores and JWTs for the
// security tests, the integration tests and the benchmark: a CA, server and
// client certificates signed by it (Go's crypto/x509), written as PEM, PKCS12
// and JKS, and an RSA key with its JWKS for OAUTHBEARER. It is for tests
// only.
package securitytest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Password is the password of every store and key written here.
const Password = "test-password"

// Cert is a certificate with its key.
type Cert struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// CA is a test certificate authority.
type CA struct{ Cert }

var serial int64 = time.Now().UnixNano()

func nextSerial() *big.Int { serial++; return big.NewInt(serial) }

// NewCA makes a self-signed CA.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"kgo-broker tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	return &CA{Cert{Cert: c, Key: key}}, err
}

// Options shape an issued certificate.
type Options struct {
	DNS       []string
	IPs       []net.IP
	NotBefore time.Time
	NotAfter  time.Time
	// RSA makes an RSA key instead of ECDSA P-256.
	RSA bool
}

// Issue signs a certificate for subject (e.g. pkix.Name{CommonName: "alice"}).
func (ca *CA) Issue(subject pkix.Name, o Options) (*Cert, error) {
	var key crypto.Signer
	var err error
	if o.RSA {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return nil, err
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: subject, NotBefore: o.NotBefore, NotAfter: o.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    o.DNS, IPAddresses: o.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	return &Cert{Cert: c, Key: key}, err
}

// Localhost issues a server certificate for localhost, ::1 and 127.0.0.1 to
// 127.0.0.16 (the cluster harness puts node n on 127.0.0.n), so host name
// verification passes for every node.
func (ca *CA) Localhost(cn string) (*Cert, error) {
	ips := []net.IP{net.IPv6loopback}
	for i := 1; i <= 16; i++ {
		ips = append(ips, net.IPv4(127, 0, 0, byte(i)))
	}
	return ca.Issue(pkix.Name{CommonName: cn, OrganizationalUnit: []string{"brokers"}, Organization: []string{"kgo-broker tests"}},
		Options{DNS: []string{"localhost"}, IPs: ips})
}

// CertPEM is the certificate in PEM.
func (c *Cert) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
}

// KeyPEM is the key as unencrypted PKCS#8 PEM.
func (c *Cert) KeyPEM() []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(c.Key)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// Files are the stores of one certificate written into a directory.
type Files struct {
	CertPEM, KeyPEM, KeystorePEM string // cert, key, both (a PEM keystore file)
	TruststorePEM                string // the CA
	KeystoreP12, TruststoreP12   string
	KeystoreJKS, TruststoreJKS   string
}

// Write writes c's stores, trusting ca, into dir with base name name.
func (c *Cert) Write(dir, name string, ca *CA) (*Files, error) {
	f := &Files{
		CertPEM: filepath.Join(dir, name+".crt"), KeyPEM: filepath.Join(dir, name+".key"),
		KeystorePEM: filepath.Join(dir, name+".keystore.pem"), TruststorePEM: filepath.Join(dir, "ca.pem"),
		KeystoreP12: filepath.Join(dir, name+".keystore.p12"), TruststoreP12: filepath.Join(dir, "truststore.p12"),
		KeystoreJKS: filepath.Join(dir, name+".keystore.jks"), TruststoreJKS: filepath.Join(dir, "truststore.jks"),
	}
	chain := append(c.CertPEM(), ca.CertPEM()...)
	write := func(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }
	if err := write(f.CertPEM, chain); err != nil {
		return nil, err
	}
	if err := write(f.KeyPEM, c.KeyPEM()); err != nil {
		return nil, err
	}
	if err := write(f.KeystorePEM, append(c.KeyPEM(), chain...)); err != nil {
		return nil, err
	}
	if err := write(f.TruststorePEM, ca.CertPEM()); err != nil {
		return nil, err
	}
	p12, err := pkcs12.Modern.Encode(c.Key, c.Cert, []*x509.Certificate{ca.Cert.Cert}, Password)
	if err != nil {
		return nil, err
	}
	if err := write(f.KeystoreP12, p12); err != nil {
		return nil, err
	}
	tp12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert.Cert}, Password)
	if err != nil {
		return nil, err
	}
	if err := write(f.TruststoreP12, tp12); err != nil {
		return nil, err
	}
	pk8, _ := x509.MarshalPKCS8PrivateKey(c.Key)
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry(name, keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: pk8,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: c.Cert.Raw}, {Type: "X509", Content: ca.Cert.Cert.Raw}}},
		[]byte(Password)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(Password)); err != nil {
		return nil, err
	}
	if err := write(f.KeystoreJKS, b.Bytes()); err != nil {
		return nil, err
	}
	ts := keystore.New()
	if err := ts.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: time.Now(),
		Certificate: keystore.Certificate{Type: "X509", Content: ca.Cert.Cert.Raw}}); err != nil {
		return nil, err
	}
	b.Reset()
	if err := ts.Store(&b, []byte(Password)); err != nil {
		return nil, err
	}
	return f, write(f.TruststoreJKS, b.Bytes())
}

// Issuer signs JWTs with an RSA key and publishes its JWKS.
type Issuer struct {
	Key   *rsa.PrivateKey
	KeyID string
	Name  string // iss
}

// NewIssuer makes an issuer with a fresh RSA key.
func NewIssuer(name, kid string) (*Issuer, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	return &Issuer{Key: k, KeyID: kid, Name: name}, err
}

// JWKS is the issuer's public key set.
func (i *Issuer) JWKS() []byte {
	ks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &i.Key.PublicKey, KeyID: i.KeyID, Algorithm: string(jose.RS256), Use: "sig"}}}
	b, _ := json.Marshal(ks)
	return b
}

// Token signs a JWT for sub with audience aud, valid for life from now
// (a negative life makes an expired token).
func (i *Issuer) Token(sub, aud string, life time.Duration) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: i.Key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.KeyID))
	if err != nil {
		return "", err
	}
	now := time.Now()
	c := jwt.Claims{Subject: sub, Issuer: i.Name, IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)),
		Expiry: jwt.NewNumericDate(now.Add(life))}
	if aud != "" {
		c.Audience = jwt.Audience{aud}
	}
	return jwt.Signed(sig).Claims(c).Claims(map[string]any{"scope": "kafka"}).Serialize()
}
