package raft

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// TestUpdateRaftVoter: the leader answers UpdateRaftVoter as Kafka 4.4's does
// at kraft.version 0 (KafkaRaftClient.handleUpdateVoterRequest,
// UpdateVoterHandler): accepted from a static voter, each refusal with
// Kafka's error, and the current leader's CONTROLLER endpoint in every
// answer.
func TestUpdateRaftVoter(t *testing.T) {
	ctx := context.Background()
	n, err := NewNode(singleVoterConfig(vfs.NewMemFS(), "/data"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, err := n.Append(ctx, [][]byte{[]byte("a")}); err != nil {
		t.Fatal(err)
	}
	req := func(mod func(r *kmsg.UpdateRaftVoterRequest)) *kmsg.UpdateRaftVoterRequest {
		r := kmsg.NewPtrUpdateRaftVoterRequest()
		r.ClusterID, r.CurrentLeaderEpoch, r.VoterID = kmsg.StringPtr("cluster"), 1, 1
		r.VoterDirectoryID = [16]byte{1, 2, 3}
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "localhost", 9093
		r.Listeners = append(r.Listeners, l)
		r.KRaftVersionFeature.MinSupportedVersion, r.KRaftVersionFeature.MaxSupportedVersion = 0, 1
		if mod != nil {
			mod(r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.UpdateRaftVoterRequest)
		want *kerr.Error
	}{
		{"accepted", nil, nil},
		{"cluster id", func(r *kmsg.UpdateRaftVoterRequest) { r.ClusterID = kmsg.StringPtr("other") }, kerr.InconsistentClusterID},
		{"older epoch", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = 0 }, kerr.FencedLeaderEpoch},
		{"newer epoch", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch = 2 }, kerr.UnknownLeaderEpoch},
		{"no directory id", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }, kerr.InvalidRequest},
		{"no CONTROLLER listener", func(r *kmsg.UpdateRaftVoterRequest) { r.Listeners[0].Name = "PLAINTEXT" }, kerr.InvalidRequest},
		{"bad kraft.version range", func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 2 }, kerr.InvalidRequest},
		{"kraft.version 0 unsupported", func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 1 }, kerr.InvalidRequest},
		{"not a voter", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterID = 7 }, kerr.VoterNotFound},
	} {
		resp, err := n.HandleRequest(ctx, req(tc.mod))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := resp.(*kmsg.UpdateRaftVoterResponse)
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		cl := r.CurrentLeader
		if r.ErrorCode != want || cl.LeaderID != 1 || cl.LeaderEpoch != 1 || cl.Host != "localhost" || cl.Port != 9093 {
			t.Errorf("%s: error %d (want %d), current leader %+v", tc.name, r.ErrorCode, want, cl)
		}
	}
}
