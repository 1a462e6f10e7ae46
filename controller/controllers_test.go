package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

func controllerRegistration(id int32, inc byte, txnMax int16) *kmsg.ControllerRegistrationRequest {
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = id, [16]byte{inc}
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "localhost", uint16(9090+id)
	req.Listeners = append(req.Listeners, l)
	for _, f := range SupportedFeatures() {
		rf := kmsg.NewControllerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		if f.Name == "transaction.version" {
			rf.MaxSupportedVersion = txnMax
		}
		req.Features = append(req.Features, rf)
	}
	return req
}

// TestControllerRegistration: RegisterControllerRecord v0 is written from
// 3.7-IV0 on and replayed into the state and the image; UpdateFeatures
// checks the registered controllers and waits for every voter.
func TestControllerRegistration(t *testing.T) {
	old := newFakeEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", metadatacache.MV3_7_IV0 - 1}} })
	resp := old.do(controllerRegistration(1, 1, 2)).(*kmsg.ControllerRegistrationResponse)
	if got := errOf(resp.ErrorCode, resp.ErrorMessage); got != "UNSUPPORTED_VERSION: The current MetadataVersion is too old to support controller registrations." {
		t.Fatalf("below 3.7-IV0: %s", got)
	}

	voters := []int32{1, 2, 3}
	e := newFakeEnv(t, func(c *Config) { c.QuorumNodeIDs = func() []int32 { return voters } })
	fail := func(msg string) string {
		return "INVALID_UPDATE_VERSION: The update failed for all features since the following feature had an error: " + msg
	}
	upgradeTV := func(want string) {
		t.Helper()
		r := e.do(updateFeatures(2, true, featureUpdate("transaction.version", 2, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse)
		if got := errOf(r.ErrorCode, r.ErrorMessage); want == "" && r.ErrorCode != 0 || want != "" && got != want {
			t.Fatalf("update: %s, want %q", got, want)
		}
	}
	upgradeTV(fail("Invalid update version 2 for feature transaction.version. controller 2 has not registered, and may not support this feature"))
	for _, id := range []int32{1, 2} {
		if r := e.do(controllerRegistration(id, byte(id), 2)).(*kmsg.ControllerRegistrationResponse); r.ErrorCode != 0 {
			t.Fatalf("register %d: %d", id, r.ErrorCode)
		}
	}
	upgradeTV(fail("Invalid update version 2 for feature transaction.version. controller 3 has not registered, and may not support this feature"))
	// Controller 3 supports less.
	if r := e.do(controllerRegistration(3, 3, 1)).(*kmsg.ControllerRegistrationResponse); r.ErrorCode != 0 {
		t.Fatalf("register 3: %d", r.ErrorCode)
	}
	upgradeTV(fail("Invalid update version 2 for feature transaction.version. Controller 3 only supports versions 0-1"))
	// A new incarnation replaces the registration.
	if r := e.do(controllerRegistration(3, 4, 2)).(*kmsg.ControllerRegistrationResponse); r.ErrorCode != 0 {
		t.Fatalf("re-register 3: %d", r.ErrorCode)
	}
	upgradeTV("")

	img := e.c.Image()
	c3 := img.Controller(3)
	if len(img.Controllers()) != 3 || c3 == nil || c3.IncarnationID != [16]byte{4} || c3.Listeners[0].Port != 9093 ||
		c3.SupportedFeatures["transaction.version"].Max != 2 {
		t.Fatalf("image controllers %+v", img.Controllers())
	}
	e.c.view(func(s *state) {
		if len(s.controllers) != 3 || s.controllers[3].incarnation != [16]byte{4} || s.controllers[3].features["transaction.version"] != [2]int16{0, 2} {
			t.Fatalf("state controllers %+v", s.controllers)
		}
	})
	// The record is v0 (RegisterControllerRecord has no other version).
	var found bool
	for _, raw := range e.raft.appended {
		r, err := metadatacache.DecodeRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		if rc, ok := r.(*metadatacache.RegisterControllerRecord); ok {
			found = true
			if rc.Version() != 0 || rc.ZkMigrationReady {
				t.Fatalf("record %+v", rc)
			}
		}
	}
	if !found {
		t.Fatal("no RegisterControllerRecord appended")
	}
}
