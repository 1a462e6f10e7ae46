package config

import (
	"strings"
	"testing"
)

func TestAuthorizerSettings(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		p := map[string]string{"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@localhost:9093",
			"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "advertised.listeners": "PLAINTEXT://localhost:9092",
			"controller.listener.names": "CONTROLLER", "log.dirs": "/tmp/x"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	c, err := New(base(map[string]string{"authorizer.class.name": StandardAuthorizer, "super.users": "User:admin;User:bob",
		"allow.everyone.if.no.acl.found": " TRUE "}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateAuthorizer(); err != nil {
		t.Fatal(err)
	}
	if s := c.Authorizer(); !s.Enabled || s.SuperUsers != "User:admin;User:bob" || !s.AllowIfNoACL {
		t.Fatalf("settings %+v", s)
	}
	if c.IsUnknown("super.users") || !IsKnownKey("allow.everyone.if.no.acl.found") {
		t.Fatal("authorizer keys are unknown")
	}
	c, _ = New(base(nil))
	if s := c.Authorizer(); s.Enabled || s.AllowIfNoACL || c.ValidateAuthorizer() != nil {
		t.Fatalf("default settings %+v", s)
	}
	c, _ = New(base(map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}))
	err = c.ValidateAuthorizer()
	if err == nil || !strings.Contains(err.Error(), "authorizer.class.name") || !strings.Contains(err.Error(), StandardAuthorizer) {
		t.Fatalf("ValidateAuthorizer = %v", err)
	}
}
