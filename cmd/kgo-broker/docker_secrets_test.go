package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/config"
)

func TestDockerSecurityEnv(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"kafka.keystore.jks": "x", "kafka.truststore.jks": "x",
		"ssl_key_creds": "keypass\n", "ssl_keystore_creds": "storepass\n", "ssl_truststore_creds": "trustpass"} {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)
	}
	env := []string{
		"KAFKA_ADVERTISED_LISTENERS=SSL://broker:9093,SASL_SSL://broker:9094",
		"KAFKA_SSL_KEYSTORE_FILENAME=kafka.keystore.jks", "KAFKA_SSL_KEY_CREDENTIALS=ssl_key_creds",
		"KAFKA_SSL_KEYSTORE_CREDENTIALS=ssl_keystore_creds", "KAFKA_SSL_CLIENT_AUTH=required",
		"KAFKA_SSL_TRUSTSTORE_FILENAME=kafka.truststore.jks", "KAFKA_SSL_TRUSTSTORE_CREDENTIALS=ssl_truststore_creds",
		"KAFKA_OPTS=-Djava.security.auth.login.config=/etc/kafka/secrets/kafka_server_jaas.conf",
		"KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required;",
	}
	var said []string
	out, err := dockerSecurityEnv(env, dir, func(s string) { said = append(said, s) })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range config.FromEnv(out) {
		got[s.Key] = s.Value
	}
	want := map[string]string{
		"ssl.keystore.location":                         filepath.Join(dir, "kafka.keystore.jks"),
		"ssl.key.password":                              "keypass",
		"ssl.keystore.password":                         "storepass",
		"ssl.truststore.location":                       filepath.Join(dir, "kafka.truststore.jks"),
		"ssl.truststore.password":                       "trustpass",
		"ssl.client.auth":                               "required",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasSuffix(k, ".filename") || strings.HasSuffix(k, ".credentials") {
			t.Errorf("image-only variable became a server property: %s", k)
		}
	}
	if !slices.Contains(said, "SSL is enabled.") || !slices.Contains(said, "SASL is enabled.") {
		t.Errorf("messages %v", said)
	}
	// The script's failures.
	for _, tc := range []struct {
		drop, want string
	}{
		{"KAFKA_SSL_KEYSTORE_FILENAME", "KAFKA_SSL_KEYSTORE_FILENAME environment variable not set"},
		{"KAFKA_SSL_TRUSTSTORE_CREDENTIALS", "KAFKA_SSL_TRUSTSTORE_CREDENTIALS environment variable not set"},
		{"KAFKA_OPTS", "KAFKA_OPTS environment variable not set"},
	} {
		var e []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, tc.drop+"=") {
				e = append(e, kv)
			}
		}
		if _, err := dockerSecurityEnv(e, dir, func(string) {}); err == nil || err.Error() != tc.want {
			t.Errorf("without %s: %v, want %q", tc.drop, err, tc.want)
		}
	}
	e := append(slices.Clone(env), "KAFKA_SSL_KEYSTORE_FILENAME=missing.jks")
	if _, err := dockerSecurityEnv(e, dir, func(string) {}); err == nil || !strings.Contains(err.Error(), "missing.jks file does not exist") {
		t.Errorf("missing keystore: %v", err)
	}
}
