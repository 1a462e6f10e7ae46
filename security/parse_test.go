package security

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestParseJaasConfig(t *testing.T) {
	m, err := ParseSingleJaasConfig("k", `org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password='admin-secret' /* a comment */ user_admin="admin-secret" // another
		user_bob="b\"ob\\x";`)
	if err != nil {
		t.Fatal(err)
	}
	if m.Class != PlainLoginModule || m.Flag != "REQUIRED" || m.Options["username"] != "admin" ||
		m.Options["password"] != "admin-secret" || m.Options["user_bob"] != `b"ob\x` {
		t.Fatalf("%+v", m)
	}
	for in, want := range map[string]string{
		"":                            "Login module not specified in JAAS config",
		"a.B":                         "Login module control flag not specified in JAAS config",
		"a.B required":                "JAAS config entry not terminated by semi-colon",
		"a.B maybe;":                  "Invalid login module control flag 'maybe' in JAAS config",
		"a.B required k;":             "Value not specified for key 'k' in JAAS config",
		"a.B required k=123;":         "Value not specified for key 'k' in JAAS config",
		"a.B required; c.D required;": "JAAS config property contains 2 login modules, should be 1 module",
		"com.sun.security.auth.module.LdapLoginModule required;": "is not allowed",
	} {
		if _, err := ParseSingleJaasConfig("k", in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	f, err := ParseJaasFile(`KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x";
   org.apache.kafka.common.security.scram.ScramLoginModule required;
};
sasl_ssl.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required; };`)
	if err != nil || len(f["KafkaServer"]) != 2 || len(f["sasl_ssl.KafkaServer"]) != 1 {
		t.Fatalf("%v %+v", err, f)
	}
}

// Cases from Kafka's SslPrincipalMapperTest.
func TestPrincipalMapper(t *testing.T) {
	for _, tc := range []struct{ rules, dn, want string }{
		{"DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U,DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "DUKE"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=Other,O=Org,C=US", "CN=Duke,OU=Other,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "Duke@JavaSoft"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$3/", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "Duke@Sun Microsystems"},
		{`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`, "CN=Duke.Example,OU=X", "duke.example"},
		{`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/`, "cn=a,ou=b,dc=c,dc=d", "a@b"},
		{`RULE:^CN=(.*)$/\/$1\//`, "CN=x", "/x/"},
	} {
		m, err := NewPrincipalMapper(tc.rules)
		if err != nil {
			t.Fatalf("%s: %v", tc.rules, err)
		}
		got, err := m.Name(tc.dn)
		if err != nil || got != tc.want {
			t.Errorf("%s on %s: %q %v, want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	m, _ := NewPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if _, err := m.Name("CN=Duke,OU=Other"); err == nil || !strings.Contains(err.Error(), "No rules apply to CN=Duke,OU=Other") {
		t.Fatalf("no rule: %v", err)
	}
	for _, bad := range []string{"DEFAULTS", "RULE:/", "RULE:^CN=(.*?)/$1/X", "rule:a/b/"} {
		if _, err := NewPrincipalMapper(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// scramClient drives franz-go's SCRAM client against the server exchange.
func TestScramExchangeAndReplay(t *testing.T) {
	cred, err := ScramSHA256.NewCredential("pencil", 4096)
	if err != nil {
		t.Fatal(err)
	}
	creds := func(u string, m int8) (ScramCredential, bool) { return cred, u == "user" && m == 1 }
	mech := scram.Auth{User: "user", Pass: "pencil"}.AsSha256Mechanism()
	sess, first, err := mech.Authenticate(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	ex := &scramExchange{mech: ScramSHA256, creds: creds}
	sf, done, err := ex.Step(first)
	if err != nil || done {
		t.Fatal(err)
	}
	_, final, err := sess.Challenge(sf)
	if err != nil {
		t.Fatal(err)
	}
	sfin, done, err := ex.Step(final)
	if err != nil || !done || ex.Principal().String() != "User:user" {
		t.Fatalf("%v %v %v", err, done, ex.Principal())
	}
	if ok, _, err := sess.Challenge(sfin); !ok || err != nil {
		t.Fatalf("client did not accept the server signature: %v", err)
	}
	// Replaying the captured client-final on a new exchange fails the
	// nonce check (the server nonce differs).
	ex2 := &scramExchange{mech: ScramSHA256, creds: creds}
	if _, _, err := ex2.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ex2.Step(final); err == nil || !strings.Contains(err.Error(), "Invalid client nonce") {
		t.Fatalf("replayed final message: %v", err)
	}
	// A wrong proof with the right nonce fails the proof check.
	ex3 := &scramExchange{mech: ScramSHA256, creds: creds}
	sf3, _, _ := ex3.Step(first)
	nonce := strings.TrimPrefix(strings.Split(string(sf3), ",")[0], "r=")
	bad := "c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	if _, _, err := ex3.Step([]byte(bad)); err == nil || !strings.Contains(err.Error(), "Invalid client credentials") {
		t.Fatalf("wrong proof: %v", err)
	}
	// Unknown user, authzid mismatch, bad format, delegation tokens.
	for msg, want := range map[string]string{
		"n,,n=nobody,r=abc":              "Invalid user credentials",
		"n,a=other,n=user,r=abc":         "different from username",
		"y,,n=user,r=abc":                "Invalid SCRAM client first message format",
		"n,,n=user,r=abc,tokenauth=true": "Token Authentication failed",
	} {
		e := &scramExchange{mech: ScramSHA256, creds: creds}
		if _, _, err := e.Step([]byte(msg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", msg, err, want)
		}
	}
}

func TestParseOAuthInitial(t *testing.T) {
	ir, err := ParseOAuthInitial([]byte("n,,\x01auth=Bearer abc.def.ghi\x01traceId=123\x01\x01"))
	if err != nil || ir.Token != "abc.def.ghi" || ir.Extensions["traceId"] != "123" {
		t.Fatalf("%+v %v", ir, err)
	}
	for _, bad := range []string{"", "n,,\x01\x01", "n,,\x01auth=Basic abc\x01\x01", "n,,\x01auth=Bearer\x01\x01", "p,,\x01auth=Bearer a\x01\x01"} {
		if _, err := ParseOAuthInitial([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzJaasConfig(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`)
	f.Add(`a required k='v\n\101' /* c */ x=y; // z`)
	f.Add("KafkaServer { a required; };")
	f.Fuzz(func(t *testing.T, s string) {
		ParseJaasConfig(s)
		ParseJaasFile(s)
	})
}

func FuzzScramMessages(f *testing.F) {
	f.Add([]byte("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"))
	f.Add([]byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add([]byte("n,a=x=2Cy,m=ext,n=u=3D,r=abc,k=v"))
	cred, _ := ScramSHA256.NewCredential("pencil", 4096)
	creds := func(u string, m int8) (ScramCredential, bool) { return cred, true }
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseClientFirst(b)
		ParseClientFinal(b)
		e := &scramExchange{mech: ScramSHA256, creds: creds}
		if _, _, err := e.Step(b); err == nil {
			e.Step(b)
		}
	})
}

func FuzzOAuthInitial(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.ghi\x01\x01"))
	f.Add([]byte("n,a=user,\x01auth=Bearer x\x01k=v\x01\x01"))
	v := &UnsecuredValidator{}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ir, err := ParseOAuthInitial(b); err == nil {
			v.Validate(ir.Token)
		}
		e := &oauthExchange{v: v, log: nopLog}
		e.Step(b)
	})
}
