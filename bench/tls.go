package main

// The SSL scenarios' certificates: one test CA and one broker certificate
// for 127.0.0.1 (security/securitytest), written once per run as a PKCS12
// keystore and truststore that both brokers' SSL listeners and the Kafka
// tools' client config use, so the two brokers serve the same certificate
// with the same keystore type.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kgo-broker/kgo-broker/security/securitytest"
)

type benchCerts struct {
	Keystore, Truststore, Password string
	ClientConfig                   string // client.properties for the SSL listener
}

var (
	certsOnce sync.Once
	certs     *benchCerts
	certsErr  error
)

// sslCerts makes (once) the certificates under dir.
func sslCerts(dir string) (*benchCerts, error) {
	certsOnce.Do(func() {
		if certsErr = os.MkdirAll(dir, 0o755); certsErr != nil {
			return
		}
		ca, err := securitytest.NewCA("kgo-bench-ca")
		if err != nil {
			certsErr = err
			return
		}
		c, err := ca.Localhost("kgo-bench-broker")
		if err != nil {
			certsErr = err
			return
		}
		f, err := c.Write(dir, "broker", ca)
		if err != nil {
			certsErr = err
			return
		}
		cfg := filepath.Join(dir, "client-ssl.properties")
		certsErr = os.WriteFile(cfg, []byte(fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=%s\nssl.truststore.password=%s\n",
			f.TruststoreP12, securitytest.Password)), 0o600)
		certs = &benchCerts{Keystore: f.KeystoreP12, Truststore: f.TruststoreP12, Password: securitytest.Password, ClientConfig: cfg}
	})
	return certs, certsErr
}

// sslProperties is the SSL listener's keystore for both brokers.
func sslProperties(c *benchCerts) string {
	return fmt.Sprintf(`listener.name.ssl.ssl.keystore.type=PKCS12
listener.name.ssl.ssl.keystore.location=%s
listener.name.ssl.ssl.keystore.password=%s
`, c.Keystore, c.Password)
}
