package main

// The SSL part of apache/kafka's image configure script
// (docker/resources/common-scripts/configure), for docker-launch: when
// KAFKA_ADVERTISED_LISTENERS has an SSL:// or SASL_SSL:// endpoint, the
// keystore is KAFKA_SSL_KEYSTORE_FILENAME under /etc/kafka/secrets and its
// passwords are the contents of the files KAFKA_SSL_KEY_CREDENTIALS and
// KAFKA_SSL_KEYSTORE_CREDENTIALS name there; with KAFKA_SSL_CLIENT_AUTH
// required or requested, the truststore likewise (KAFKA_SSL_TRUSTSTORE_*).
// The _FILENAME and _CREDENTIALS variables are the image's, not server
// properties, so they are dropped. SASL listeners take their JAAS file from
// KAFKA_OPTS (-Djava.security.auth.login.config=/etc/kafka/secrets/...), and
// KAFKA_LISTENER_NAME_<L>_* variables map to listener.name.<l>.* keys as any
// KAFKA_* variable does.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// dockerSecretsDir is where the image expects keystores and credentials.
const dockerSecretsDir = "/etc/kafka/secrets"

var imageOnlyVars = map[string]bool{
	"KAFKA_SSL_KEYSTORE_FILENAME": true, "KAFKA_SSL_KEYSTORE_CREDENTIALS": true, "KAFKA_SSL_KEY_CREDENTIALS": true,
	"KAFKA_SSL_TRUSTSTORE_FILENAME": true, "KAFKA_SSL_TRUSTSTORE_CREDENTIALS": true,
}

var saslEndpoint = regexp.MustCompile(`SASL_.*://`)

// dockerSecurityEnv applies the configure script's SSL and SASL steps to env.
// Messages on stdout are the script's ("SSL is enabled."); an error is its
// exit 1 with its message.
func dockerSecurityEnv(env []string, secretsDir string, log func(string)) ([]string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !imageOnlyVars[k] {
			out = append(out, kv)
		}
	}
	adv := vars["KAFKA_ADVERTISED_LISTENERS"]
	ensure := func(name string) (string, error) {
		if vars[name] == "" {
			return "", fmt.Errorf("%s environment variable not set", name)
		}
		return vars[name], nil
	}
	exists := func(p string) error {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s file does not exist", p)
		}
		return nil
	}
	secret := func(credVar string) (string, error) {
		name, err := ensure(credVar)
		if err != nil {
			return "", err
		}
		p := filepath.Join(secretsDir, name)
		if err := exists(p); err != nil {
			return "", err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		// $(cat file) drops trailing newlines.
		return strings.TrimRight(string(b), "\n"), nil
	}
	if strings.Contains(adv, "SSL://") {
		log("SSL is enabled.")
		f, err := ensure("KAFKA_SSL_KEYSTORE_FILENAME")
		if err != nil {
			return nil, err
		}
		loc := filepath.Join(secretsDir, f)
		if err := exists(loc); err != nil {
			return nil, err
		}
		keyPw, err := secret("KAFKA_SSL_KEY_CREDENTIALS")
		if err != nil {
			return nil, err
		}
		storePw, err := secret("KAFKA_SSL_KEYSTORE_CREDENTIALS")
		if err != nil {
			return nil, err
		}
		out = append(out, "KAFKA_SSL_KEYSTORE_LOCATION="+loc, "KAFKA_SSL_KEY_PASSWORD="+keyPw, "KAFKA_SSL_KEYSTORE_PASSWORD="+storePw)
		if ca := vars["KAFKA_SSL_CLIENT_AUTH"]; strings.Contains(ca, "required") || strings.Contains(ca, "requested") {
			f, err := ensure("KAFKA_SSL_TRUSTSTORE_FILENAME")
			if err != nil {
				return nil, err
			}
			loc := filepath.Join(secretsDir, f)
			if err := exists(loc); err != nil {
				return nil, err
			}
			pw, err := secret("KAFKA_SSL_TRUSTSTORE_CREDENTIALS")
			if err != nil {
				return nil, err
			}
			out = append(out, "KAFKA_SSL_TRUSTSTORE_LOCATION="+loc, "KAFKA_SSL_TRUSTSTORE_PASSWORD="+pw)
		}
	}
	if saslEndpoint.MatchString(adv) {
		log("SASL is enabled.")
		if _, err := ensure("KAFKA_OPTS"); err != nil {
			return nil, err
		}
		if !strings.Contains(vars["KAFKA_OPTS"], "java.security.auth.login.config") {
			log("KAFKA_OPTS should contain 'java.security.auth.login.config' property.")
		}
	}
	return out, nil
}
