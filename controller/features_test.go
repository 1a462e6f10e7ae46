package controller

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func writeMem(t *testing.T, fs vfs.FS, path string, b []byte) {
	t.Helper()
	if err := fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSupportedFeatures(t *testing.T) {
	want := []FeatureRange{
		{"eligible.leader.replicas.version", 0, 1}, {"group.version", 0, 1}, {"kraft.version", 0, 1},
		{"metadata.version", 7, 33}, {"share.version", 0, 2}, {"streams.version", 0, 1}, {"transaction.version", 0, 2},
	}
	if got := SupportedFeatures(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
}

// The levels kafka-storage.sh format finalizes (kafka-storage.sh
// version-mapping of Kafka 4.4), capped where kgo-broker does not implement
// the feature.
func TestDefaultLevels(t *testing.T) {
	kafka := map[int16]map[string]int16{ // Feature.defaultLevel in Kafka 4.4
		21: {"kraft.version": 1, "transaction.version": 0, "group.version": 0, "eligible.leader.replicas.version": 0, "share.version": 0, "streams.version": 0},
		25: {"kraft.version": 1, "transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 0, "share.version": 0, "streams.version": 0},
		30: {"kraft.version": 1, "transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1},
		33: {"kraft.version": 1, "transaction.version": 2, "group.version": 1, "eligible.leader.replicas.version": 1, "share.version": 2, "streams.version": 1},
	}
	for mv, levels := range kafka {
		for name, want := range levels {
			f, _ := FeatureSpecOf(name)
			if got := f.DefaultLevel(mv); got != min(want, f.MaxSupported) {
				t.Errorf("%s at %d: %d, want %d", name, mv, got, min(want, f.MaxSupported))
			}
		}
	}
}

func TestBootstrapFeatures(t *testing.T) {
	cases := []struct {
		mv      int16
		given   map[string]int16
		dynamic bool
		want    []Feature
		err     string
	}{
		{mv: 33, want: []Feature{{"metadata.version", 33}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 31, want: []Feature{{"metadata.version", 31}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 30, given: map[string]int16{"share.version": 2}, want: []Feature{{"metadata.version", 30}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 28, want: []Feature{{"metadata.version", 28}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 1}, {"transaction.version", 2}}},
		{mv: 26, given: map[string]int16{"share.version": 1}, want: []Feature{{"metadata.version", 26}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 1}, {"transaction.version", 2}}},
		{mv: 26, want: []Feature{{"metadata.version", 26}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"transaction.version", 2}}},
		{mv: 25, given: map[string]int16{"eligible.leader.replicas.version": 1}, want: []Feature{{"metadata.version", 25}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"transaction.version", 2}}},
		{mv: 22, given: map[string]int16{"eligible.leader.replicas.version": 1}, err: "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"},
		{mv: 25, want: []Feature{{"metadata.version", 25}, {"group.version", 1}, {"transaction.version", 2}}},
		{mv: 25, given: map[string]int16{"transaction.version": 1}, want: []Feature{{"metadata.version", 25}, {"group.version", 1}, {"transaction.version", 1}}},
		{mv: 21, want: []Feature{{"metadata.version", 21}}},
		{mv: 21, given: map[string]int16{"transaction.version": 2}, want: []Feature{{"metadata.version", 21}, {"transaction.version", 2}}},
		{mv: 7, given: map[string]int16{"group.version": 1}, want: []Feature{{"metadata.version", 7}, {"group.version", 1}}},
		{mv: 33, given: map[string]int16{"share.version": 0, "eligible.leader.replicas.version": 0, "streams.version": 0, "group.version": 0},
			want: []Feature{{"metadata.version", 33}, {"transaction.version", 2}}},
		{mv: 33, dynamic: true, want: []Feature{{"metadata.version", 33}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 33, given: map[string]int16{"eligible.leader.replicas.version": 0}, want: []Feature{{"metadata.version", 33}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 33, given: map[string]int16{"share.version": 1}, want: []Feature{{"metadata.version", 33}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 1}, {"streams.version", 1}, {"transaction.version", 2}}},
		{mv: 33, given: map[string]int16{"nope": 1}, err: "Unsupported feature: nope. Supported features are: eligible.leader.replicas.version, group.version, kraft.version, share.version, streams.version, transaction.version"},
		{mv: 33, given: map[string]int16{"share.version": 5}, err: "No feature:share.version with feature level 5"},
		{mv: 33, given: map[string]int16{"transaction.version": 3}, err: "No feature:transaction.version with feature level 3"},
		{mv: 33, given: map[string]int16{"kraft.version": 1}, err: "Cannot set kraft.version to 1 unless controller.quorum.voters is empty"},
		{mv: 33, given: map[string]int16{"kraft.version": 0}, dynamic: true, err: "Cannot set kraft.version to 0 if controller.quorum.voters is empty"},
		{mv: 34, err: "No MetadataVersion with feature level 34. Valid feature levels are from 7 to 33."},
	}
	for _, c := range cases {
		got, err := BootstrapFeatures(c.mv, c.given, c.dynamic)
		if c.err != "" {
			var fe *FeatureError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d %v: %v, want %q", c.mv, c.given, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d %v: %v %v, want %v", c.mv, c.given, got, err, c.want)
		}
	}
	if !reflect.DeepEqual(DefaultBootstrapFeatures(), cases[0].want) {
		t.Errorf("DefaultBootstrapFeatures %v", DefaultBootstrapFeatures())
	}
}

// Feature.validateVersion's dependency rule, which kgo-broker's supported
// levels never reach through BootstrapFeatures.
func TestCheckDependencies(t *testing.T) {
	elr, _ := FeatureSpecOf("eligible.leader.replicas.version")
	err := checkDependencies(elr.Name, 1, elr.Levels[1], map[string]int16{"metadata.version": 21})
	if err == nil || err.Error() != "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23" {
		t.Fatal(err)
	}
	if err := checkDependencies(elr.Name, 1, elr.Levels[1], map[string]int16{"metadata.version": 23}); err != nil {
		t.Fatal(err)
	}
	err = checkDependencies("group.version", 1, FeatureLevelSpec{}, map[string]int16{})
	if err == nil || err.Error() != "group.version could not be set to 1 because it depends on metadata.version=7 (3.3-IV3)" {
		t.Fatal(err)
	}
}

func TestResolveReleaseVersion(t *testing.T) {
	for _, c := range []struct {
		release string
		given   map[string]int16
		want    int16
		err     string
	}{
		{want: 33}, {release: "4.4", want: 33}, {release: "4.0", want: 25}, {release: "3.3-IV3", want: 7},
		{given: map[string]int16{"metadata.version": 20}, want: 20},
		{release: "4.9", err: "Unknown metadata.version '4.9'. Supported metadata.version are: 3.3-IV3, 3.4-IV0,"},
		{release: "4.0", given: map[string]int16{"metadata.version": 25}, err: "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."},
		{given: map[string]int16{"metadata.version": 6}, err: "No MetadataVersion with feature level 6. Valid feature levels are from 7 to 33."},
	} {
		got, err := ResolveReleaseVersion(c.release, c.given)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %v: %v", c.release, c.given, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q %v: %d %v, want %d", c.release, c.given, got, err, c.want)
		}
	}
}

func updateFeatures(version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly, req.FeatureUpdates = version, validateOnly, updates
	return req
}

func featureUpdate(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	return u
}

func TestUpdateFeatures(t *testing.T) {
	e := newFakeEnv(t, func(c *Config) {
		c.BootstrapFeatures = []Feature{{"metadata.version", 25}, {"group.version", 1}, {"transaction.version", 1}}
	})
	e.addBroker(1)
	check := func(req *kmsg.UpdateFeaturesRequest, wantErr string) {
		t.Helper()
		resp := e.do(req).(*kmsg.UpdateFeaturesResponse)
		got := errOf(resp.ErrorCode, resp.ErrorMessage)
		if wantErr == "" && resp.ErrorCode != 0 || wantErr != "" && got != wantErr {
			t.Fatalf("%+v: %s, want %q", req.FeatureUpdates, got, wantErr)
		}
		if req.Version <= 1 {
			if len(resp.Results) != len(req.FeatureUpdates) {
				t.Fatalf("v%d results %+v", req.Version, resp.Results)
			}
			for _, r := range resp.Results {
				if r.ErrorCode != resp.ErrorCode {
					t.Fatalf("result %+v", r)
				}
			}
		} else if len(resp.Results) != 0 {
			t.Fatalf("v2 results %+v", resp.Results)
		}
	}
	level := func(name string) int16 { l, _ := e.c.Image().Feature(name); return l }
	fail := func(msg string) string {
		return "INVALID_UPDATE_VERSION: The update failed for all features since the following feature had an error: " + msg
	}

	// validateOnly changes nothing.
	check(updateFeatures(2, true, featureUpdate("metadata.version", 33, upgradeUpgrade)), "")
	if level("metadata.version") != 25 {
		t.Fatal("validateOnly wrote")
	}
	check(updateFeatures(1, false, featureUpdate("metadata.version", 33, upgradeUpgrade), featureUpdate("transaction.version", 2, upgradeUpgrade)), "")
	if level("metadata.version") != 33 || level("transaction.version") != 2 {
		t.Fatalf("features %v", e.c.Image().Features())
	}
	for _, c := range []struct {
		u    kmsg.UpdateFeaturesRequestFeatureUpdate
		want string
	}{
		{featureUpdate("metadata.version", 32, upgradeSafeDowngrade),
			"Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."},
		{featureUpdate("metadata.version", 30, upgradeUnsafe),
			"Unsupported metadata.version downgrade from 33 to 30. Unsafe metadata downgrade is not supported in this version."},
		{featureUpdate("metadata.version", 32, upgradeUpgrade),
			"Invalid update version 32 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{featureUpdate("metadata.version", 34, upgradeUpgrade),
			"Invalid update version 34 for feature metadata.version. Local controller 1 only supports versions 7-33"},
		{featureUpdate("share.version", 3, upgradeUpgrade),
			"Invalid update version 3 for feature share.version. Local controller 1 only supports versions 0-2"},
		{featureUpdate("streams.version", 2, upgradeUpgrade),
			"Invalid update version 2 for feature streams.version. Local controller 1 only supports versions 0-1"},
		{featureUpdate("transaction.version", 3, upgradeUpgrade),
			"Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"},
		{featureUpdate("group.version", 2, upgradeSafeDowngrade),
			"Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"},
		{featureUpdate("group.version", 1, 7), "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{featureUpdate("group.version", -1, upgradeSafeDowngrade), "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{featureUpdate("nope", 0, upgradeUpgrade), "Invalid update version 0 for feature nope. Feature nope not found."},
		{featureUpdate("nope", 1, upgradeUpgrade), "Invalid update version 1 for feature nope. Local controller 1 does not support this feature."},
	} {
		check(updateFeatures(2, false, c.u), fail(c.want))
	}
	// One bad update fails all.
	check(updateFeatures(2, false, featureUpdate("group.version", 0, upgradeSafeDowngrade), featureUpdate("streams.version", 2, upgradeUpgrade)),
		fail("Invalid update version 2 for feature streams.version. Local controller 1 only supports versions 0-1"))
	if level("group.version") != 1 {
		t.Fatal("a failed request changed group.version")
	}
	// v0 has no upgrade type: AllowDowngrade is not enough, as in Kafka.
	u := featureUpdate("group.version", 0, 0)
	u.AllowDowngrade = true
	check(updateFeatures(0, false, u), fail("Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."))
	// A safe downgrade of a feature, and disabling it.
	check(updateFeatures(2, false, featureUpdate("transaction.version", 1, upgradeSafeDowngrade), featureUpdate("group.version", 0, upgradeSafeDowngrade)), "")
	if level("transaction.version") != 1 || level("group.version") != 0 {
		t.Fatalf("features %v", e.c.Image().Features())
	}
	check(updateFeatures(2, false, featureUpdate("kraft.version", 0, upgradeUpgrade)), "")
	check(updateFeatures(2, false, featureUpdate("kraft.version", 0, upgradeSafeDowngrade)), "")

	// A registered broker that supports less limits the update.
	r := e.register(2, 1)
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version, req.BrokerID, req.ClusterID, req.IncarnationID, req.LogDirs = 4, 3, "test-cluster", [16]byte{3}, [][16]byte{dirID(3)}
	for _, f := range SupportedFeatures() {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		if f.Name == "transaction.version" {
			rf.MaxSupportedVersion = 1
		}
		req.Features = append(req.Features, rf)
	}
	if resp := e.do(req).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	check(updateFeatures(2, false, featureUpdate("transaction.version", 2, upgradeUpgrade)),
		fail("Invalid update version 2 for feature transaction.version. Broker 3 only supports versions 0-1"))
}

// A safe metadata.version downgrade crosses only levels that did not change
// the metadata records; the controller then writes records at the lower
// level's versions.
func TestMetadataVersionUpgradeAndSafeDowngrade(t *testing.T) {
	e := newFakeEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", 29}} })
	e.addBroker(1)
	lastRegister := func() *metadatacache.RegisterBrokerRecord {
		t.Helper()
		e.raft.mu.Lock()
		defer e.raft.mu.Unlock()
		for i := len(e.raft.appended) - 1; i >= 0; i-- {
			r, err := metadatacache.DecodeRecord(e.raft.appended[i])
			if err != nil {
				t.Fatal(err)
			}
			if rb, ok := r.(*metadatacache.RegisterBrokerRecord); ok {
				return rb
			}
		}
		t.Fatal("no RegisterBrokerRecord")
		return nil
	}
	if v := lastRegister().Version(); v != 3 {
		t.Fatalf("RegisterBrokerRecord v%d at 4.2-IV1", v)
	}
	resp := e.do(updateFeatures(2, false, featureUpdate("metadata.version", 30, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 {
		t.Fatal(errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	// A new incarnation registers at 4.3-IV0's RegisterBrokerRecord v4.
	e.clock.Advance(e.cfg.SessionTimeout * 2)
	e.c.fenceStaleBrokers()
	if r := e.register(1, 2); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if v := lastRegister().Version(); v != 4 {
		t.Fatalf("RegisterBrokerRecord v%d at 4.3-IV0", v)
	}
	// 4.3-IV0 changed the metadata: no way back below it.
	resp = e.do(updateFeatures(2, false, featureUpdate("metadata.version", 29, upgradeSafeDowngrade))).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatal(errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	// 4.4-IV0 did not: 31 -> 30 is safe.
	for _, step := range []struct {
		level int16
		typ   int8
	}{{31, upgradeUpgrade}, {30, upgradeSafeDowngrade}} {
		resp = e.do(updateFeatures(2, false, featureUpdate("metadata.version", step.level, step.typ))).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != 0 || e.c.Image().MetadataVersion() != step.level {
			t.Fatalf("to %d: %s", step.level, errOf(resp.ErrorCode, resp.ErrorMessage))
		}
	}
}

// Below 3.6-IV0 an ISR shrink bumps the leader epoch.
func TestIsrShrinkBumpsLeaderEpochBelow36(t *testing.T) {
	for _, c := range []struct {
		mv   int16
		bump bool
	}{{11, true}, {12, false}} {
		p := &partitionState{replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 1}
		b := &changeBuilder{mv: c.mv, topicID: [16]byte{1}, p: p, acceptable: func(int32) bool { return true },
			minISR: 1, uncleanShutdown: -1, targetIsr: []int32{1}}
		rec := b.build()
		if rec == nil || (rec.Leader == 1) != c.bump || (!c.bump && rec.Leader != metadatacache.NoLeaderChange) {
			t.Errorf("mv %d: %+v", c.mv, rec)
		}
	}
}

// The zero checkpoint a format wrote bootstraps the controller; raft hands
// it to the listener as a snapshot, which is not state.
func TestBootstrapFromZeroCheckpoint(t *testing.T) {
	dir := t.TempDir()
	feats := []Feature{{"metadata.version", 25}, {"group.version", 1}}
	if err := WriteBootstrapCheckpoint(dir, BootstrapRecords(feats), 1000); err != nil {
		t.Fatal(err)
	}
	if recs, err := ReadBootstrap(dir); err != nil || len(recs) != 2 {
		t.Fatalf("%v %v", recs, err)
	}
	e := &testEnv{t: t, fs: vfs.NewMem(), clock: &fakeClock{}}
	// raft sees the same file in its own file system.
	b, err := os.ReadFile(filepath.Join(dir, "__cluster_metadata-0", BootstrapSnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	writeMem(t, e.fs, "/kraft/__cluster_metadata-0/"+BootstrapSnapshotFile, b)
	e.start(func(c *Config) { c.MetadataLogDir = dir })
	img := e.c.Image()
	if got := img.Features(); !reflect.DeepEqual(got, map[string]int16{"metadata.version": 25, "group.version": 1}) {
		t.Fatalf("features %v", got)
	}
	// LeaderChange at 0, then Begin, two FeatureLevelRecords and End: the
	// bootstrap records were written to the log (a snapshot load would have
	// left one NoOpRecord at 1).
	if img.Offset != 4 {
		t.Fatalf("image offset %d: the bootstrap records were not written to the log", img.Offset)
	}
}

// Kafka 4.4's formats are accepted: its default one (every feature at
// Kafka 4.4's latest level) and an older one.
func TestBootstrapFromKafkaFormat(t *testing.T) {
	fixtures := filepath.Join("..", "metadatacache", "testdata", "kafka-4.4.0")
	for _, c := range []struct {
		file string
		want []Feature
		err  string
	}{
		{"bootstrap.checkpoint", []Feature{{"metadata.version", 33}, {"eligible.leader.replicas.version", 1}, {"group.version", 1}, {"share.version", 2}, {"streams.version", 1}, {"transaction.version", 2}}, ""},
		{"bootstrap-4.0-tv1.checkpoint", []Feature{{"metadata.version", 25}, {"group.version", 1}, {"transaction.version", 1}}, ""},
	} {
		b, err := os.ReadFile(filepath.Join(fixtures, c.file))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "__cluster_metadata-0"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "__cluster_metadata-0", BootstrapSnapshotFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadBootstrap(dir)
		if err != nil {
			t.Fatal(err)
		}
		feats, err := BootstrapFeaturesOf(recs)
		if err != nil {
			t.Fatal(err)
		}
		err = checkBootstrapFeatures(feats)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v", c.file, err)
			}
			_, err := New(testConfig(&fakeClock{}, newFakeRaft(), func(cfg *Config) { cfg.MetadataLogDir = dir }))
			if err == nil {
				t.Errorf("%s: New accepted it", c.file)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(feats, c.want) {
			t.Errorf("%s: %v %v", c.file, feats, err)
		}
		// kgo-broker writes the same records in the same layout: header at
		// 0, the records from 1, the footer after them.
		s, err := raft.DecodeSnapshot(raft.OffsetAndEpoch{}, EncodeBootstrapCheckpoint(BootstrapRecords(feats), 1, raft.SnapshotControl{}))
		if err != nil {
			t.Fatal(err)
		}
		k, _ := raft.DecodeSnapshot(raft.OffsetAndEpoch{}, b)
		if !slices.EqualFunc(s.Records(), k.Records(), func(a, b []byte) bool { return string(a) == string(b) }) ||
			len(s.Batches) != 1 || s.Batches[0].BaseOffset != k.Batches[0].BaseOffset {
			t.Errorf("%s: kgo-broker's zero checkpoint differs from Kafka's", c.file)
		}
	}
}

// The legacy bootstrap.checkpoint (Kafka before 4.2) is read when the zero
// checkpoint has no metadata records.
func TestReadLegacyBootstrap(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LegacyBootstrapFile), EncodeBootstrapCheckpoint(BootstrapRecords([]Feature{{"metadata.version", 21}}), 1, raft.SnapshotControl{}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteBootstrapCheckpoint(dir, nil, 1); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadBootstrap(dir)
	if err != nil || len(recs) != 1 || recs[0].(*metadatacache.FeatureLevelRecord).FeatureLevel != 21 {
		t.Fatalf("%v %v", recs, err)
	}
	if recs, err := ReadBootstrap(t.TempDir()); recs != nil || err != nil {
		t.Fatalf("empty dir: %v %v", recs, err)
	}
	os.WriteFile(filepath.Join(dir, LegacyBootstrapFile), []byte("junk"), 0o644)
	if _, err := ReadBootstrap(dir); err == nil {
		t.Fatal("junk accepted")
	}
}

// From 4.3-IV0 a BrokerHeartbeat v2's CordonedLogDirs that changed (or is
// the first reported) becomes a BrokerRegistrationChangeRecord v3, as Kafka
// 4.4 brokers report an empty list right after registering.
func TestHeartbeatCordonedLogDirs(t *testing.T) {
	for _, mv := range []int16{29, 30, 33} {
		e := newFakeEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", mv}} })
		epoch := e.addBroker(1)
		count := func() (n int, last *metadatacache.BrokerRegistrationChangeRecord) {
			e.raft.mu.Lock()
			defer e.raft.mu.Unlock()
			for _, raw := range e.raft.appended {
				r, _ := metadatacache.DecodeRecord(raw)
				if c, ok := r.(*metadatacache.BrokerRegistrationChangeRecord); ok && c.Version() == 3 {
					n, last = n+1, c
				}
			}
			return n, last
		}
		hb := func(dirs [][16]byte) {
			t.Helper()
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.Version, req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = 2, 1, epoch, e.c.Image().Offset
			req.CordonedLogDirs = dirs
			if resp := e.do(req).(*kmsg.BrokerHeartbeatResponse); resp.ErrorCode != 0 || resp.IsFenced {
				t.Fatalf("mv %d: heartbeat %+v", mv, resp)
			}
		}
		hb(nil)
		hb([][16]byte{})
		hb([][16]byte{})
		hb([][16]byte{dirID(1)})
		hb([][16]byte{dirID(1)})
		n, last := count()
		switch {
		case mv < 30 && n != 0:
			t.Errorf("mv %d: %d cordoned records", mv, n)
		case mv >= 30 && (n != 2 || len(last.CordonedLogDirs) != 1 || last.CordonedLogDirs[0] != dirID(1)):
			t.Errorf("mv %d: %d cordoned records, last %+v", mv, n, last)
		}
		if cd := e.c.Image().Broker(1).CordonedDirectories; mv >= 30 && len(cd) != 1 {
			t.Errorf("mv %d: image cordoned dirs %v", mv, cd)
		}
	}
}

// The controller's own state follows ClearElrRecord as the image does.
func TestStateReplaysClearElr(t *testing.T) {
	s := newState()
	id := [16]byte{7}
	s.replay(0, &metadatacache.TopicRecord{Name: "t", TopicID: id})
	p := metadatacache.NewPartitionRecord()
	p.TopicID, p.PartitionID, p.Replicas, p.Isr, p.Leader, p.LeaderEpoch, p.PartitionEpoch = id, 0, []int32{1}, []int32{1}, 1, 0, 0
	p.EligibleLeaderReplicas = []int32{2}
	s.replay(1, p)
	if err := s.replay(2, &metadatacache.ClearElrRecord{}); err != nil {
		t.Fatal(err)
	}
	if ps := s.topics[id].parts[0]; len(ps.elr) != 0 || ps.partitionEpoch != 1 {
		t.Fatalf("%+v", ps)
	}
}

// TestUpgradeKRaftVersion: kafka-features.sh upgrade --feature
// kraft.version=1 on a running static quorum (a real single-voter
// raft.Node): raft appends KRaftVersionRecord 1 and the voter set with the
// leader's directory id, the controller a NoOpRecord; downgrading is refused.
func TestUpgradeKRaftVersion(t *testing.T) {
	e := newTestEnv(t, nil)
	upd := func(level int16, typ int8, validateOnly bool) *kmsg.UpdateFeaturesResponse {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.Version, r.ValidateOnly = 1, validateOnly
		r.FeatureUpdates = append(r.FeatureUpdates, featureUpdate("kraft.version", level, typ))
		return e.do(r).(*kmsg.UpdateFeaturesResponse)
	}
	if r := upd(1, upgradeUpgrade, true); r.ErrorCode != 0 || e.node.KRaftVersion() != 0 {
		t.Fatalf("validate only: %d %v, kraft.version %d", r.ErrorCode, r.ErrorMessage, e.node.KRaftVersion())
	}
	if r := upd(1, upgradeUpgrade, false); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if v := e.node.KRaftVersion(); v != 1 {
		t.Fatalf("kraft.version %d after the upgrade", v)
	}
	if vs := e.node.Voters(); vs.Len() != 1 || !vs.IsVoter(raft.ReplicaKey{ID: 1, DirectoryID: [16]byte{0: 0xd1, 15: 1}}) ||
		!vs.IsVoter(raft.ReplicaKey{ID: 1, DirectoryID: [16]byte{0: 0xd1, 15: 1}}) {
		t.Fatalf("voters %v", vs)
	}
	if r := upd(1, upgradeUpgrade, false); r.ErrorCode != 0 {
		t.Fatalf("again: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := upd(0, upgradeSafeDowngrade, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code ||
		!strings.Contains(*r.ErrorMessage, "Can't downgrade the version of this feature.") {
		t.Fatalf("downgrade: %d %v", r.ErrorCode, *r.ErrorMessage)
	}
}
