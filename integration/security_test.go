//go:build integration

package integration

// TLS and SASL end to end, with clients nobody here wrote: franz-go
// (kgo.DialTLSConfig, sasl/plain, sasl/scram, sasl/oauth), Apache Kafka
// 4.4's Java tools (--command-config / --producer.config / --consumer.config)
// and kcat (librdkafka), against one node that serves every security
// protocol (SSL with mTLS, SASL_PLAINTEXT, SASL_SSL; PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512, OAUTHBEARER with a JWKS file), with certificates made by
// the test as PEM, PKCS12 and JKS. security_cluster_test.go runs a 3-node
// cluster whose inter-broker and controller listeners are secured.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kgo-broker/kgo-broker/security/securitytest"
)

// testPKI is a CA, a broker certificate and a client certificate written as
// PEM, PKCS12 and JKS, and a JWT issuer with its JWKS file.
type testPKI struct {
	dir        string
	ca         *securitytest.CA
	server     *securitytest.Files
	serverCert *securitytest.Cert
	client     *securitytest.Files
	issuer     *securitytest.Issuer
	jwks       string
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := securitytest.NewCA("kgo-it-ca")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ca.Localhost("kgo-broker")
	if err != nil {
		t.Fatal(err)
	}
	sf, err := sc.Write(dir, "server", ca)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := ca.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"clients"}}, securitytest.Options{RSA: true})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := cc.Write(dir, "client", ca)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := securitytest.NewIssuer("https://issuer.kgo.test", "it-key")
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testPKI{dir: dir, ca: ca, server: sf, serverCert: sc, client: cf, issuer: iss, jwks: jwks}
}

func (p *testPKI) tlsConfig(t testing.TB, mtls bool) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert.Cert)
	cfg := &tls.Config{RootCAs: pool}
	if mtls {
		c, err := tls.LoadX509KeyPair(p.client.CertPEM, p.client.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func (p *testPKI) token(t testing.TB, sub string, life time.Duration) string {
	tok, err := p.issuer.Token(sub, "kafka", life)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (p *testPKI) write(t testing.TB, name, content string) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	itPlainJaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	itScramJaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
	itOAuthJaas = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`
)

// saslListenerProps are the listener.name.<l>.* keys of a SASL listener
// with every mechanism.
func (p *testPKI) saslListenerProps(l string) string {
	l = strings.ToLower(l)
	return fmt.Sprintf(`listener.name.%[1]s.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.%[1]s.plain.sasl.jaas.config=%[2]s
listener.name.%[1]s.scram-sha-256.sasl.jaas.config=%[3]s
listener.name.%[1]s.scram-sha-512.sasl.jaas.config=%[3]s
listener.name.%[1]s.oauthbearer.sasl.jaas.config=%[4]s
listener.name.%[1]s.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
`, l, itPlainJaas, itScramJaas, itOAuthJaas)
}

type secureNode struct {
	*Broker
	ssl, saslPlain, saslSSL string // addresses
	pki                     *testPKI
}

// startSecureNode starts one node with PLAINTEXT (the harness's readiness
// check), CONTROLLER, SSL (JKS keystore, PKCS12 truststore, client
// certificates requested), SASL_PLAINTEXT and SASL_SSL (PKCS12 keystore)
// listeners, formatted with a bootstrap SCRAM user.
func startSecureNode(t *testing.T) *secureNode {
	t.Helper()
	p := newTestPKI(t)
	b := NewBroker(t, BrokerOptions{})
	ports := freePorts(t, 3)
	n := &secureNode{Broker: b, pki: p,
		ssl: fmt.Sprintf("127.0.0.1:%d", ports[0]), saslPlain: fmt.Sprintf("127.0.0.1:%d", ports[1]), saslSSL: fmt.Sprintf("127.0.0.1:%d", ports[2])}
	extra := fmt.Sprintf(`
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d,SSL://%[3]s,SASL_PLAINTEXT://%[4]s,SASL_SSL://%[5]s
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d,SSL://%[3]s,SASL_PLAINTEXT://%[4]s,SASL_SSL://%[5]s
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
listener.name.ssl.ssl.keystore.location=%[6]s
listener.name.ssl.ssl.keystore.password=%[7]s
listener.name.ssl.ssl.key.password=%[7]s
listener.name.ssl.ssl.truststore.type=PKCS12
listener.name.ssl.ssl.truststore.location=%[8]s
listener.name.ssl.ssl.truststore.password=%[7]s
listener.name.ssl.ssl.client.auth=requested
listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([^,]*),.*$/$1/L,DEFAULT
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=%[9]s
listener.name.sasl_ssl.ssl.keystore.password=%[7]s
sasl.oauthbearer.jwks.endpoint.url=file://%[10]s
sasl.oauthbearer.expected.audience=kafka
sasl.oauthbearer.expected.issuer=https://issuer.kgo.test
connection.failed.authentication.delay.ms=10
`, b.Port, b.CtrlPort, n.ssl, n.saslPlain, n.saslSSL, p.server.KeystoreJKS, securitytest.Password, p.server.TruststoreP12,
		p.server.KeystoreP12, p.jwks) + p.saslListenerProps("SASL_PLAINTEXT") + p.saslListenerProps("SASL_SSL")
	f, err := os.OpenFile(b.Props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(extra)
	f.Close()
	// Kafka's Formatter writes --add-scram users into the bootstrap
	// metadata: the broker can authenticate them before any
	// AlterUserScramCredentials.
	r := RunCommand(t, RunOpts{Hermetic: true}, brokerBin, "format", "-t", newClusterID(), "-c", b.Props,
		"--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
		"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "UserScramCredentialRecord(name='alice', mechanism=1") {
		t.Fatalf("format --add-scram:\n%s", r)
	}
	b.Start()
	b.WaitReady()
	return n
}

// roundTrip produces n records to topic through addr with opts and reads
// them back.
func roundTrip(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) error {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(5 * time.Second), kgo.RetryTimeout(10 * time.Second),
		kgo.AllowAutoTopicCreation()}
	pcl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return err
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	ccl, err := kgo.NewClient(append(append(base, opts...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer ccl.Close()
	got := 0
	for got < n {
		fs := ccl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d: %w", got, n, err)
		}
		for _, e := range fs.Errors() {
			return fmt.Errorf("fetch: %w", e.Err)
		}
		got += fs.NumRecords()
	}
	return nil
}

func TestSecurityFranzGo(t *testing.T) {
	n := startSecureNode(t)
	p := n.pki
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}
	cases := []struct {
		name string
		addr string
		opts []kgo.Opt
	}{
		{"SSL", n.ssl, []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, false))}},
		{"SSL mTLS", n.ssl, []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, true))}},
		{"SASL_PLAINTEXT PLAIN", n.saslPlain, []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
		{"SASL_PLAINTEXT SCRAM-SHA-256", n.saslPlain, []kgo.Opt{kgo.SASL(alice.AsSha256Mechanism())}},
		{"SASL_SSL SCRAM-SHA-512", n.saslSSL, []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, false)), kgo.SASL(alice.AsSha512Mechanism())}},
		{"SASL_SSL PLAIN", n.saslSSL, []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, false)), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}},
		{"SASL_SSL OAUTHBEARER", n.saslSSL, []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, false)), kgo.SASL(oauth.Auth{Token: p.token(t, "carol", time.Hour)}.AsMechanism())}},
		{"SASL_PLAINTEXT OAUTHBEARER", n.saslPlain, []kgo.Opt{kgo.SASL(oauth.Auth{Token: p.token(t, "carol", time.Hour)}.AsMechanism())}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := roundTrip(t, tc.addr, fmt.Sprintf("sec-franz-%d", i), 5, tc.opts...); err != nil {
				t.Fatal(err)
			}
		})
	}

	// Refused: each with Kafka's error, and the broker serves on.
	ping := func(addr string, opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
		return err
	}
	other, _ := securitytest.NewIssuer("https://issuer.kgo.test", "it-key")
	forged, _ := other.Token("carol", "kafka", time.Hour)
	for _, bad := range []struct {
		name string
		addr string
		mech sasl.Mechanism
		want string
	}{
		{"wrong PLAIN password", n.saslPlain, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), "Authentication failed: Invalid username or password"},
		{"wrong SCRAM password", n.saslPlain, scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{"unknown SCRAM user", n.saslPlain, scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{"expired JWT", n.saslPlain, oauth.Auth{Token: p.token(t, "carol", -time.Hour)}.AsMechanism(), ""},
		{"forged JWT", n.saslPlain, oauth.Auth{Token: forged}.AsMechanism(), ""},
	} {
		err := ping(bad.addr, kgo.SASL(bad.mech))
		if err == nil {
			t.Errorf("%s: accepted", bad.name)
			continue
		}
		if bad.want != "" && (!errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), bad.want)) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED %q", bad.name, err, bad.want)
		}
	}
	if err := ping(n.ssl); err == nil {
		t.Error("a plaintext client was served on the SSL listener")
	}
	if err := ping(n.saslPlain); err == nil {
		t.Error("an unauthenticated client was served on the SASL_PLAINTEXT listener")
	}
	if err := ping(n.saslPlain, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
		t.Fatalf("the broker stopped serving after the refused clients: %v", err)
	}
}

// javaClientProps writes a Java client config for a listener.
func (n *secureNode) javaClientProps(t *testing.T, name, body string) string {
	return n.pki.write(t, name, body+fmt.Sprintf("ssl.truststore.location=%s\nssl.truststore.password=%s\n", n.pki.server.TruststoreJKS, securitytest.Password))
}

func TestSecurityJavaTools(t *testing.T) {
	requireKafkaTools(t)
	n := startSecureNode(t)
	p := n.pki
	sslProps := n.javaClientProps(t, "ssl.properties", "security.protocol=SSL\n")
	mtlsProps := n.javaClientProps(t, "mtls.properties", fmt.Sprintf("security.protocol=SSL\nssl.keystore.type=PKCS12\nssl.keystore.location=%s\nssl.keystore.password=%s\n",
		p.client.KeystoreP12, securitytest.Password))
	scramProps := n.javaClientProps(t, "scram.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`+"\n")
	plainProps := n.javaClientProps(t, "plain.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`+"\n")

	MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", n.ssl, "--command-config", sslProps,
		"--create", "--topic", "sec-java", "--partitions", "1", "--replication-factor", "1")
	for _, c := range []struct{ addr, props string }{{n.ssl, mtlsProps}, {n.saslSSL, scramProps}, {n.saslPlain, plainProps}} {
		r := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", c.addr, "--command-config", c.props, "--list")
		if !strings.Contains(r.Stdout, "sec-java") {
			t.Fatalf("kafka-topics --list over %s:\n%s", c.props, r)
		}
	}

	// SCRAM users through kafka-configs.sh. One mechanism per request: Kafka
	// 4.4's controller (ScramControlManager, keyed by user) refuses two for
	// one user in a request with DUPLICATE_RESOURCE, and so does kgo-broker.
	r := KafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", n.saslSSL, "--command-config", scramProps,
		"--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=bob-secret],SCRAM-SHA-512=[password=bob-secret]",
		"--entity-type", "users", "--entity-name", "bob")
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "A user credential cannot be altered twice in the same request") {
		t.Fatalf("two mechanisms for one user in one request:\n%s", r)
	}
	for _, c := range []string{"SCRAM-SHA-256=[iterations=8192,password=bob-secret]", "SCRAM-SHA-512=[password=bob-secret]"} {
		MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", n.saslSSL, "--command-config", scramProps,
			"--alter", "--add-config", c, "--entity-type", "users", "--entity-name", "bob")
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", n.Addr, "--describe", "--entity-type", "users", "--entity-name", "bob")
	if !strings.Contains(r.Stdout, "SCRAM-SHA-256=iterations=8192") || !strings.Contains(r.Stdout, "SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("kafka-configs --describe users bob:\n%s", r)
	}
	bobProps := n.javaClientProps(t, "bob.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`+"\n")
	MustKafkaTool(t, RunOpts{Stdin: "one\ntwo\nthree\n"}, "kafka-console-producer.sh", "--bootstrap-server", n.saslSSL,
		"--command-config", bobProps, "--topic", "sec-java")
	r = MustKafkaTool(t, RunOpts{}, "kafka-console-consumer.sh", "--bootstrap-server", n.saslSSL, "--command-config", bobProps,
		"--topic", "sec-java", "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000")
	if got := lines(r.Stdout); len(got) != 3 || got[0] != "one" || got[2] != "three" {
		t.Fatalf("console consumer over SASL_SSL SCRAM-SHA-512:\n%s", r)
	}
	// A wrong password: the Java client reports Kafka's error.
	badProps := n.javaClientProps(t, "bad.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="wrong";`+"\n")
	r = KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-topics.sh", "--bootstrap-server", n.saslSSL, "--command-config", badProps, "--list")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512") {
		t.Fatalf("wrong password with the Java client:\n%s", r)
	}
	// Deleting the user's credentials ends its logins.
	MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", n.Addr, "--alter", "--delete-config", "SCRAM-SHA-512",
		"--entity-type", "users", "--entity-name", "bob")
	r = MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", n.Addr, "--describe", "--entity-type", "users", "--entity-name", "bob")
	if strings.Contains(r.Stdout, "SCRAM-SHA-512") {
		t.Fatalf("SCRAM-SHA-512 still described after --delete-config:\n%s", r)
	}

	// OAUTHBEARER with the Java client: the token from a file (Kafka 4.x's
	// file JWT retriever, allowed by the system property Kafka requires).
	tok := p.write(t, "token.jwt", p.token(t, "dave", time.Hour))
	oauthProps := n.javaClientProps(t, "oauth.properties", fmt.Sprintf(`security.protocol=SASL_SSL
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=%s
sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
sasl.oauthbearer.token.endpoint.url=file://%s
`, itOAuthJaas, tok))
	env := []string{"KAFKA_OPTS=-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://" + tok + " -Dorg.apache.kafka.sasl.oauthbearer.allowed.files=" + tok}
	r = MustKafkaTool(t, RunOpts{Env: env}, "kafka-topics.sh", "--bootstrap-server", n.saslSSL, "--command-config", oauthProps, "--list")
	if !strings.Contains(r.Stdout, "sec-java") {
		t.Fatalf("kafka-topics over OAUTHBEARER:\n%s", r)
	}
}

func TestSecurityKcat(t *testing.T) {
	kcat := requireKcat(t)
	n := startSecureNode(t)
	p := n.pki
	createTopic(t, n.Broker, "sec-kcat", 1, nil)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"SSL mTLS", []string{"-b", n.ssl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + p.server.TruststorePEM,
			"-X", "ssl.certificate.location=" + p.client.CertPEM, "-X", "ssl.key.location=" + p.client.KeyPEM}},
		{"SASL_SSL SCRAM-SHA-256", []string{"-b", n.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + p.server.TruststorePEM,
			"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}},
		{"SASL_PLAINTEXT PLAIN", []string{"-b", n.saslPlain, "-X", "security.protocol=SASL_PLAINTEXT",
			"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}},
		{"SASL_SSL SCRAM-SHA-512", []string{"-b", n.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + p.server.TruststorePEM,
			"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := "hello " + c.name
			if r := RunCommand(t, RunOpts{Stdin: msg + "\n", Timeout: 30 * time.Second}, kcat, append(c.args, "-P", "-t", "sec-kcat")...); r.ExitCode != 0 {
				t.Fatalf("kcat produce:\n%s", r)
			}
			r := RunCommand(t, RunOpts{Timeout: 30 * time.Second}, kcat, append(c.args, "-C", "-t", "sec-kcat", "-o", "beginning", "-e")...)
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, msg) {
				t.Fatalf("kcat consume:\n%s", r)
			}
		})
	}
	r := RunCommand(t, RunOpts{Timeout: 30 * time.Second}, kcat, "-b", n.saslPlain, "-X", "security.protocol=SASL_PLAINTEXT",
		"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=wrong", "-L", "-m", "5")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "Invalid username or password") {
		t.Fatalf("kcat with a wrong password:\n%s", r)
	}
}

// TestSecurityKeystoreReload changes the SSL listener's keystore with
// kafka-configs.sh --alter --entity-type brokers (a dynamic
// listener.name.ssl.ssl.keystore.location): new connections get the new
// certificate, and a keystore with another subject is refused.
func TestSecurityKeystoreReload(t *testing.T) {
	n := startSecureNode(t)
	p := n.pki
	serial := func() string {
		c, err := tls.Dial("tcp", n.ssl, p.tlsConfig(t, false))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	nc, err := p.ca.Localhost("kgo-broker") // same subject, new key and serial
	if err != nil {
		t.Fatal(err)
	}
	nf, err := nc.Write(filepath.Join(p.dir), "server2", p.ca)
	if err != nil {
		t.Fatal(err)
	}
	adm := n.Admin()
	alter := func(path string) {
		t.Helper()
		ctx := ctxT(t, 20*time.Second)
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.keystore.location", Value: &path}}, 1)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	alter(nf.KeystoreJKS)
	waitFor(t, 20*time.Second, "the new certificate on new connections", func() error {
		if s := serial(); s == before {
			return fmt.Errorf("still serial %s", s)
		}
		return nil
	})
	after := serial()
	if after != nc.Cert.SerialNumber.String() {
		t.Fatalf("serial %s, want the new certificate's %s", after, nc.Cert.SerialNumber)
	}
	// Another subject: refused (ssl.allow.dn.changes is false), the
	// listener keeps the new one.
	oc, _ := p.ca.Issue(pkix.Name{CommonName: "someone-else"}, securitytest.Options{DNS: []string{"localhost"}})
	of, err := oc.Write(p.dir, "server3", p.ca)
	if err != nil {
		t.Fatal(err)
	}
	alter(of.KeystoreJKS)
	waitFor(t, 20*time.Second, "the refusal in the log", func() error {
		if !strings.Contains(n.Log(), "Keystore DistinguishedName does not match") {
			return errors.New("not yet")
		}
		return nil
	})
	if s := serial(); s != after {
		t.Fatalf("serial %s after a refused keystore, want %s", s, after)
	}
}
