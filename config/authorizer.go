package config

import (
	"fmt"
	"strings"
)

// StandardAuthorizer is the one authorizer.class.name kgo-broker acts on:
// Kafka's KRaft authorizer, whose ACLs live in the metadata log.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// authorizerKeys are StandardAuthorizer's own settings. They are not in
// KafkaConfig's ConfigDef (the authorizer reads them from the broker's
// originals), so Kafka accepts them as it accepts any plugin key; they are
// known here so that a strict start accepts them too.
var authorizerKeys = map[string]bool{
	"super.users":                    true,
	"allow.everyone.if.no.acl.found": true,
}

// AuthorizerSettings are StandardAuthorizer's configuration.
type AuthorizerSettings struct {
	// Enabled is authorizer.class.name=StandardAuthorizer.
	Enabled bool
	// SuperUsers is super.users, raw (';'-separated principals).
	SuperUsers string
	// AllowIfNoACL is allow.everyone.if.no.acl.found.
	AllowIfNoACL bool
}

// Authorizer returns the authorizer settings.
func (c *Config) Authorizer() AuthorizerSettings {
	s := AuthorizerSettings{Enabled: strings.TrimSpace(c.String("authorizer.class.name")) == StandardAuthorizer}
	s.SuperUsers = c.explicit["super.users"]
	s.AllowIfNoACL = strings.EqualFold(strings.TrimSpace(c.explicit["allow.everyone.if.no.acl.found"]), "true")
	return s
}

// ValidateAuthorizer refuses an authorizer kgo-broker does not have. It is
// checked when the node starts, not by New: KafkaConfig accepts any string
// there and Kafka fails when the server creates the authorizer
// (AuthorizerUtils.createAuthorizer: the class cannot be loaded).
// allow.everyone.if.no.acl.found is read as StandardAuthorizer reads it
// (Boolean.parseBoolean of the trimmed value: anything but "true" is false).
func (c *Config) ValidateAuthorizer() error {
	v := strings.TrimSpace(c.String("authorizer.class.name"))
	if v != "" && v != StandardAuthorizer {
		return c.fail("authorizer.class.name", fmt.Sprintf("Invalid value %s for configuration authorizer.class.name: Class %s cannot be found", v, v),
			"kgo-broker supports authorizer.class.name="+StandardAuthorizer+" (ACLs in the metadata log) or no authorizer (empty)")
	}
	return nil
}
