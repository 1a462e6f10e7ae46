package main

import (
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/security"
)

func TestParseAddScram(t *testing.T) {
	r, err := parseAddScram("SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=8192]")
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "alice" || r.Mechanism != 1 || r.Iterations != 8192 || len(r.Salt) == 0 {
		t.Fatalf("%+v", r)
	}
	// The stored key is the one the SCRAM server checks proofs against.
	salted, _ := security.ScramSHA256.SaltedPassword("alice-secret", r.Salt, 8192)
	if c := security.ScramSHA256.CredentialFromSaltedPassword(salted, r.Salt, 8192); string(c.StoredKey) != string(r.StoredKey) {
		t.Fatal("stored key does not match the password")
	}
	r, err = parseAddScram(`SCRAM-SHA-512=[name="bob",salt="c2FsdA==",saltedpassword="cGFzcw=="]`)
	if err != nil || r.Name != "bob" || r.Mechanism != 2 || r.Iterations != 4096 || string(r.Salt) != "salt" {
		t.Fatalf("%+v %v", r, err)
	}
	for arg, want := range map[string]string{
		"SCRAM-SHA-256":                                  "Failed to find equals sign",
		"SCRAM-SHA-1=[name=a,password=b]":                "The add-scram mechanism SCRAM-SHA-1 is not supported.",
		"SCRAM-SHA-256=name=a]":                          "Expected configuration string to start with [",
		"SCRAM-SHA-256=[password=b]":                     "You must supply 'name' to add-scram",
		"SCRAM-SHA-256=[name=a]":                         "You must supply one of 'password' or 'saltedpassword'",
		"SCRAM-SHA-256=[name=a,saltedpassword=cA==]":     "You must supply 'salt' with 'saltedpassword'",
		"SCRAM-SHA-256=[name=a,password=b,iterations=1]": "The minimum iterations for SCRAM-SHA-256 is 4096",
		"SCRAM-SHA-256=[name=a,password=b,foo=1]":        "Unknown SCRAM configurations: foo",
	} {
		if _, err := parseAddScram(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", arg, err, want)
		}
	}
}
