package config

import (
	"fmt"
	"slices"
	"strings"
)

// securityActedKeys are the security keys kgo-broker acts on (package
// security reads them, per listener with listener.name.<l>. overrides).
var securityActedKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
	"ssl.allow.dn.changes", "ssl.allow.san.changes",
	"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "sasl.mechanism.controller.protocol",
	"sasl.server.max.receive.size", "connections.max.reauth.ms", "connection.failed.authentication.delay.ms",
	"principal.builder.class", "authorizer.class.name",
	"sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
	"sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
	"sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.scope.claim.name",
}

// validateInterBrokerSASL is KafkaConfig's check that a SASL inter-broker
// listener enables the inter-broker mechanism.
func (c *Config) validateInterBrokerSASL() error {
	proto := c.ListenerSecurityProtocols[c.InterBrokerListenerName]
	if proto != "SASL_PLAINTEXT" && proto != "SASL_SSL" {
		return nil
	}
	mech := c.String("sasl.mechanism.inter.broker.protocol")
	enabled := c.List("sasl.enabled.mechanisms")
	if v, ok := c.explicit["listener.name."+strings.ToLower(c.InterBrokerListenerName)+".sasl.enabled.mechanisms"]; ok {
		enabled = splitList(v)
	}
	if !slices.Contains(enabled, mech) {
		return c.fail("sasl.mechanism.inter.broker.protocol", fmt.Sprintf("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"),
			fmt.Sprintf("sasl.mechanism.inter.broker.protocol is %s and sasl.enabled.mechanisms is %s", mech, strings.Join(enabled, ",")))
	}
	return nil
}

// actedListenerKey reports whether a listener-prefixed key is one kgo-broker
// acts on: listener.name.<l>.<key> or listener.name.<l>.<mechanism>.<key>
// (sasl.jaas.config, sasl.server.callback.handler.class, ...) with <key> an
// acted key or a mechanism's JAAS / callback handler key.
func actedListenerKey(name string) bool {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return false
	}
	_, rest, ok = strings.Cut(rest, ".")
	if !ok {
		return false
	}
	acted := func(k string) bool {
		if key, ok := brokerIndex[k]; ok && key.Acted {
			return true
		}
		return k == "sasl.jaas.config" || k == "sasl.server.callback.handler.class"
	}
	if acted(rest) {
		return true
	}
	// A mechanism prefix (plain., scram-sha-256., oauthbearer., ...).
	if _, k, ok := strings.Cut(rest, "."); ok {
		return acted(k)
	}
	return false
}
