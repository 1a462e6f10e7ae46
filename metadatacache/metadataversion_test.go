package metadatacache

import (
	"errors"
	"slices"
	"testing"
)

// The levels are Kafka 4.4's production ones: 3.3-IV3 (7) to 4.4-IV2 (33),
// without gaps.
func TestMetadataVersions(t *testing.T) {
	mvs := MetadataVersions()
	if mvs[0].Level != MinimumMetadataVersion || mvs[len(mvs)-1].Level != LatestMetadataVersion || mvs[len(mvs)-1].Name != "4.4-IV2" {
		t.Fatalf("range %v .. %v", mvs[0], mvs[len(mvs)-1])
	}
	for i, mv := range mvs {
		if mv.Level != MinimumMetadataVersion+int16(i) {
			t.Fatalf("gap at %v", mv)
		}
		if got, ok := MetadataVersionOf(mv.Level); !ok || got != mv {
			t.Fatalf("MetadataVersionOf(%d) = %v", mv.Level, got)
		}
	}
	for _, c := range []struct {
		in   string
		want int16
	}{{"4.4", 33}, {"4.4-IV2", 33}, {"4.4-IV1", 32}, {"4.3", 30}, {"4.0", 25}, {"4.0-IV0", 22}, {"3.3", 7}, {"3.9-IV0", 21}, {"3.7", 19}} {
		if mv, ok := ParseMetadataVersion(c.in); !ok || mv.Level != c.want {
			t.Errorf("ParseMetadataVersion(%q) = %v %v, want %d", c.in, mv, ok, c.want)
		}
	}
	for _, bad := range []string{"", "4.5", "4.5-IV0", "4.4-IV3", "3.2", "3.3-IV2", "4", "foo"} {
		if mv, ok := ParseMetadataVersion(bad); ok {
			t.Errorf("ParseMetadataVersion(%q) = %v", bad, mv)
		}
	}
	if MetadataVersionName(33) != "4.4-IV2" || MetadataVersionName(34) != "UNKNOWN 34" || MetadataVersionName(1) != "UNKNOWN 1" {
		t.Fatal("MetadataVersionName")
	}
}

// MetadataChangedBetween is MetadataVersion.checkIfMetadataChanged: only
// levels above the lower one count.
func TestMetadataChangedBetween(t *testing.T) {
	for _, c := range []struct {
		a, b int16
		want bool
	}{
		{33, 33, false}, {32, 33, true}, {33, 32, true}, {31, 32, true}, {30, 31, false}, {31, 30, false},
		{24, 29, false}, {22, 25, true}, {23, 25, false}, {25, 23, false}, {7, 8, true}, {8, 10, false},
	} {
		if got := MetadataChangedBetween(c.a, c.b); got != c.want {
			t.Errorf("MetadataChangedBetween(%d, %d) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// ACLs, SCRAM credentials and delegation tokens are kept in the image (so
// snapshots carry them) and written back by Records.
func TestReplaySecurityRecords(t *testing.T) {
	c := bootstrap(t)
	apply(t, c,
		&AccessControlEntryRecord{ID: uuidN(1), ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3},
		&AccessControlEntryRecord{ID: uuidN(2), ResourceType: 2, ResourceName: "u", PatternType: 3, Principal: "User:b", Host: "10.0.0.0/8", Operation: 4, PermissionType: 2},
		&RemoveAccessControlEntryRecord{ID: uuidN(1)},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 8192},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 2, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 4096},
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 2},
		&DelegationTokenRecord{TokenID: "t1", Owner: "User:a", Requester: "User:a", Renewers: []string{"User:b"}, MaxTimestamp: 10},
		&DelegationTokenRecord{TokenID: "t2", Owner: "User:a", Requester: "User:a", Renewers: []string{}},
		&RemoveDelegationTokenRecord{TokenID: "t2"},
	)
	img := c.Image()
	if acls := img.ACLs(); len(acls) != 1 || acls[0].ID != uuidN(2) || acls[0].Host != "10.0.0.0/8" {
		t.Fatalf("ACLs %+v", acls)
	}
	if sc := img.ScramCredentials(); len(sc) != 1 || sc[0].Mechanism != 1 || sc[0].Iterations != 8192 {
		t.Fatalf("SCRAM %+v", sc)
	}
	if dt := img.DelegationTokens(); len(dt) != 1 || dt[0].TokenID != "t1" || !slices.Equal(dt[0].Renewers, []string{"User:b"}) {
		t.Fatalf("tokens %+v", dt)
	}
	// Removing an ACL that does not exist cannot be replayed.
	err := c.Apply(Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + 1, Records: []Record{&RemoveAccessControlEntryRecord{ID: uuidN(9)}}})
	if !errors.Is(err, ErrReplay) {
		t.Fatalf("removing a missing ACL: %v", err)
	}
	c2 := NewCache(Config{})
	if err := c2.LoadSnapshot(Batch{LastOffset: 5, Records: roundTrip(t, img.Records())}); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(c2.Image().ACLs(), img.ACLs(), func(a, b *ACL) bool { return *a == *b }) ||
		len(c2.Image().ScramCredentials()) != 1 || len(c2.Image().DelegationTokens()) != 1 {
		t.Fatal("snapshot lost ACLs, SCRAM credentials or tokens")
	}
}

// roundTrip encodes and decodes records, as a snapshot reader would.
func roundTrip(t *testing.T, recs []Record) []Record {
	t.Helper()
	out := make([]Record, len(recs))
	for i, r := range recs {
		d, err := DecodeRecord(EncodeRecord(r))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d
	}
	return out
}

// ClearElrRecord empties the ELR and last known ELR of one topic's
// partitions (or every topic's), bumping the partition epoch of those that
// had one (TopicsDelta.replay(ClearElrRecord)).
func TestReplayClearElr(t *testing.T) {
	c := bootstrap(t)
	ch := change(fooID, 0)
	ch.EligibleLeaderReplicas, ch.LastKnownElr = []int32{2}, []int32{}
	ch2 := change(barID, 0)
	ch2.LastKnownElr = []int32{1}
	apply(t, c, ch, ch2)
	before := c.Image()
	img := apply(t, c, &ClearElrRecord{TopicName: "foo"})
	p := img.TopicByName("foo").Partition(0)
	if len(p.Elr) != 0 || len(p.LastKnownElr) != 0 || p.PartitionEpoch != before.TopicByName("foo").Partition(0).PartitionEpoch+1 {
		t.Fatalf("foo-0 after ClearElr: %+v", p)
	}
	if img.TopicByName("foo").Partition(1) != before.TopicByName("foo").Partition(1) {
		t.Fatal("a partition without ELR changed")
	}
	if img.TopicByName("bar") != before.TopicByName("bar") {
		t.Fatal("another topic changed")
	}
	img = apply(t, c, &ClearElrRecord{})
	if q := img.TopicByName("bar").Partition(0); len(q.LastKnownElr) != 0 {
		t.Fatalf("bar-0 after ClearElr of all: %+v", q)
	}
	err := c.Apply(Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + 1, Records: []Record{&ClearElrRecord{TopicName: "nope"}}})
	if !errors.Is(err, ErrReplay) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// The cordoned log dirs (KIP-1066) come from RegisterBrokerRecord v4 and a
// non-null BrokerRegistrationChangeRecord v3 CordonedLogDirs.
func TestReplayCordonedLogDirs(t *testing.T) {
	c := bootstrap(t)
	if c.Image().Broker(1).CordonedDirectories != nil {
		t.Fatal("cordoned dirs before any report")
	}
	img := apply(t, c, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, CordonedLogDirs: [][16]byte{}})
	if cd := img.Broker(1).CordonedDirectories; cd == nil || len(cd) != 0 {
		t.Fatalf("empty report: %v", cd)
	}
	img = apply(t, c, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, CordonedLogDirs: [][16]byte{uuidN(3)}})
	if cd := img.Broker(1).CordonedDirectories; len(cd) != 1 || cd[0] != uuidN(3) {
		t.Fatalf("cordoned: %v", cd)
	}
	before := img.Broker(1)
	img = apply(t, c, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10})
	if img.Broker(1) != before {
		t.Fatal("a null CordonedLogDirs changed the broker")
	}
}
