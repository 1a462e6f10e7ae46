package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/security"
)

func scramUpsert(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iterations, []byte("salt"), []byte("salted")
	return u
}

func TestAlterUserScramCredentials(t *testing.T) {
	e := newTestEnv(t, nil)
	results := func(req *kmsg.AlterUserSCRAMCredentialsRequest) map[string]int16 {
		out := map[string]int16{}
		for _, r := range e.do(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			out[r.User] = r.ErrorCode
		}
		return out
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		scramUpsert("alice", 1, 8192), scramUpsert("", 1, 8192), scramUpsert("bob", 3, 8192),
		scramUpsert("carol", 1, 100), scramUpsert("dave", 2, 20000), scramUpsert("eve", 1, 4096), scramUpsert("eve", 2, 4096),
	}
	got := results(req)
	want := map[string]int16{"alice": 0, "": kerr.UnacceptableCredential.Code, "bob": kerr.UnsupportedSaslMechanism.Code,
		"carol": kerr.UnacceptableCredential.Code, "dave": kerr.UnacceptableCredential.Code, "eve": kerr.DuplicateResource.Code}
	for u, c := range want {
		if got[u] != c {
			t.Errorf("%q: error %d, want %d", u, got[u], c)
		}
	}
	// The stored credential is the one the SCRAM server checks.
	var stored []byte
	e.c.view(func(s *state) {
		if s.scram[scramKey{"alice", 1}] != 8192 {
			t.Errorf("alice not in the controller state: %v", s.scram)
		}
	})
	img := e.c.cache.Image()
	if c, ok := img.ScramCredential("alice", 1); ok {
		stored = c.StoredKey
	}
	if want := security.ScramSHA256.CredentialFromSaltedPassword([]byte("salted"), []byte("salt"), 8192); string(stored) != string(want.StoredKey) {
		t.Error("the stored key is not derived from the salted password")
	}
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 1
	d2 := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d2.Name, d2.Mechanism = "nobody", 1
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{d, d2}
	got = results(del)
	if got["alice"] != 0 || got["nobody"] != kerr.ResourceNotFound.Code {
		t.Fatalf("deletions: %v", got)
	}
}
