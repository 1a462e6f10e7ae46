package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestSnapshotFileNames(t *testing.T) {
	id := OffsetAndEpoch{Offset: 1234, Epoch: 7}
	name := SnapshotFileName(id)
	if name != "00000000000000001234-0000000007.checkpoint" {
		t.Fatalf("name %q", name)
	}
	for _, tc := range []struct {
		name string
		kind snapshotFileKind
		ok   bool
	}{
		{name, snapshotFrozen, true},
		{"00000000000000001234-0000000007-0123abcd.checkpoint.part", snapshotPartial, true},
		{"00000000000000001234-0000000007.checkpoint.deleted", snapshotDeleted, true},
		{"00000000000000001234.log", 0, false},
		{"00000000000000001234-0000000007x.checkpoint", 0, false},
		{"leader-epoch-checkpoint", 0, false},
	} {
		got, kind, ok := parseSnapshotName(tc.name)
		if ok != tc.ok || ok && (got != id || kind != tc.kind) {
			t.Errorf("%s: %v %v %v", tc.name, got, kind, ok)
		}
	}
}

func TestSnapshotEncodeDecode(t *testing.T) {
	id := OffsetAndEpoch{Offset: 5000, Epoch: 3}
	var recs [][]byte
	for i := 0; i < 2500; i++ {
		recs = append(recs, []byte(fmt.Sprintf("record-%d", i)))
	}
	b := EncodeSnapshot(id, 1700000000123, 1700000000999, recs)
	s, err := DecodeSnapshot(id, b)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastContainedLogTimestamp != 1700000000123 || s.LastContainedLogOffset() != 4999 || s.LastContainedLogEpoch() != 3 {
		t.Fatalf("reader %+v", s)
	}
	// header at 0, data batches of at most 1024 records from 1, footer last
	if len(s.Batches) != 3 || s.Batches[0].BaseOffset != 1 || len(s.Batches[0].Records) != 1024 || s.Batches[2].LastOffset != 2500 {
		t.Fatalf("batches %d first %d", len(s.Batches), s.Batches[0].BaseOffset)
	}
	if got := s.Records(); !slices.EqualFunc(got, recs, bytes.Equal) {
		t.Fatal("records differ")
	}
	for _, b := range s.Batches {
		if b.Epoch != 3 {
			t.Fatalf("batch epoch %d", b.Epoch)
		}
	}
	// no header, no footer, trailing garbage
	hdrLen := len(EncodeSnapshot(id, 0, 0, nil)) / 2
	if _, err := DecodeSnapshot(id, b[:len(b)-hdrLen]); err == nil {
		t.Error("snapshot without footer accepted")
	}
	data := EncodeEntry(Entry{Offset: 0, LastOffset: 0, Epoch: 3, Records: [][]byte{[]byte("x")}})
	if _, err := DecodeSnapshot(id, data); !errors.Is(err, errBadSnapshot) {
		t.Errorf("snapshot without header: %v", err)
	}
	bad := slices.Clone(b)
	bad[len(bad)-1] ^= 1
	if _, err := DecodeSnapshot(id, bad); err == nil {
		t.Error("corrupt snapshot accepted")
	}
	empty, err := DecodeSnapshot(id, EncodeSnapshot(id, 9, 9, nil))
	if err != nil || len(empty.Batches) != 0 || empty.LastContainedLogTimestamp != 9 {
		t.Fatalf("empty snapshot %+v %v", empty, err)
	}
}

// snapListener records snapshots and batches.
type snapListener struct {
	*recListener
	snaps []*SnapshotReader
}

func (l *snapListener) HandleSnapshot(s *SnapshotReader) {
	l.mu.Lock()
	l.snaps = append(l.snaps, s)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func snapshotTestConfig(fs vfs.FS, dir string) Config {
	cfg := singleVoterConfig(fs, dir)
	cfg.Snapshots = SnapshotConfig{
		MaxBytesBetweenSnapshots: 1 << 40, // written by hand here
		RetentionBytes:           1,       // keep only what the latest snapshot needs
		RetentionMs:              -1,
		SegmentBytes:             1024,
		FetchSnapshotMaxBytes:    100,
	}
	return cfg
}

func dirNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// values returns the record values a listener has: its latest snapshot's,
// then the batches after it.
func (l *snapListener) values() []string {
	var out []string
	from := int64(0)
	if n := len(l.snaps); n > 0 {
		for _, r := range l.snaps[n-1].Records() {
			out = append(out, string(r))
		}
		from = l.snaps[n-1].ID.Offset
	}
	for _, b := range l.batches {
		if b.BaseOffset >= from {
			for _, r := range b.Records {
				out = append(out, string(r))
			}
		}
	}
	return out
}

// TestNodeSnapshotRestart: snapshots are written as Kafka names them, the
// log before the latest one is deleted by retention, and a restart loads the
// newest snapshot and replays only the tail.
func TestNodeSnapshotRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fs := vfs.NewMemFS()
		pdir := filepath.Join("/meta", "__cluster_metadata-0")
		n, err := NewNode(snapshotTestConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		l := &snapListener{recListener: newRecListener()}
		n.Register(l)
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		var want []string
		cur := n
		appendN := func(k int) {
			for i := 0; i < k; i++ {
				v := fmt.Sprintf("r%03d-%s", len(want), strings.Repeat("x", 40))
				if _, err := cur.Append(ctx, records(v)); err != nil {
					t.Fatal(err)
				}
				want = append(want, v)
			}
		}
		// the state machine is the list of values; a snapshot holds them all
		snapshotNow := func() OffsetAndEpoch {
			t.Helper()
			hw := n.HighWatermark()
			vals := slices.Clone(want)
			id, err := n.CreateSnapshot(SnapshotImage{EndOffset: hw, Epoch: 1, LastContainedLogTimestamp: 42,
				Records: func() [][]byte {
					var out [][]byte
					for _, v := range vals {
						out = append(out, []byte(v))
					}
					return out
				}})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		appendN(40)
		s1 := snapshotNow()
		if s1 != (OffsetAndEpoch{Offset: 41, Epoch: 1}) {
			t.Fatalf("snapshot id %+v", s1)
		}
		if _, err := n.CreateSnapshot(SnapshotImage{EndOffset: 41, Epoch: 1}); !errors.Is(err, ErrSnapshotExists) {
			t.Fatalf("same snapshot again: %v", err)
		}
		if _, err := n.CreateSnapshot(SnapshotImage{EndOffset: 1000, Epoch: 1}); err == nil {
			t.Fatal("snapshot beyond the high watermark accepted")
		}
		// one snapshot: nothing deleted yet (Kafka keeps the log before the only snapshot)
		if st := n.Status(); st.LogStartOffset != 0 {
			t.Fatalf("log start %d after the first snapshot", st.LogStartOffset)
		}
		appendN(40)
		s2 := snapshotNow()
		st := n.Status()
		if st.LogStartOffset != s2.Offset {
			t.Fatalf("log start %d, want the latest snapshot's end %d", st.LogStartOffset, s2.Offset)
		}
		names := dirNames(t, fs, pdir)
		if slices.Contains(names, SnapshotFileName(s1)) || !slices.Contains(names, SnapshotFileName(s2)) ||
			slices.Contains(names, "00000000000000000000.log") {
			t.Fatalf("files after cleaning: %v", names)
		}
		for _, nm := range names {
			if strings.HasSuffix(nm, ".part") || strings.HasSuffix(nm, ".checkpoint.deleted") {
				t.Fatalf("leftover %s", nm)
			}
		}
		content, err := vfs.ReadFile(fs, filepath.Join(pdir, SnapshotFileName(s2)))
		if err != nil {
			t.Fatal(err)
		}
		sr, err := DecodeSnapshot(s2, content)
		if err != nil || sr.LastContainedLogTimestamp != 42 || len(sr.Records()) != 80 {
			t.Fatalf("snapshot content: %v", err)
		}
		appendN(10)
		l.waitFor(t, func() bool { return len(l.values()) == len(want) })
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}

		// Restart: the newest snapshot first, then only the batches after it.
		n2, err := NewNode(snapshotTestConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		l2 := &snapListener{recListener: newRecListener()}
		n2.Register(l2)
		plain := newRecListener() // no HandleSnapshot: gets the log from its start
		n2.Register(plain)
		if err := n2.Start(); err != nil {
			t.Fatal(err)
		}
		defer n2.Close()
		cur = n2
		// The log start comes back as the first segment's base (the metadata
		// log has no log-start-offset-checkpoint), at or below the snapshot.
		if st := n2.Status(); st.LogStartOffset == 0 || st.LogStartOffset > s2.Offset || len(n2.core.Snapshots()) != 1 {
			t.Fatalf("after restart: log start %d snapshots %v", st.LogStartOffset, n2.core.Snapshots())
		}
		appendN(1)
		l2.waitFor(t, func() bool { return len(l2.values()) == len(want) })
		if !slices.Equal(l2.values(), want) {
			t.Fatalf("values after restart\n got %v\nwant %v", l2.values(), want)
		}
		if len(l2.snaps) != 1 || l2.snaps[0].ID != s2 {
			t.Fatalf("snapshots delivered %d", len(l2.snaps))
		}
		for _, b := range l2.batches {
			if b.BaseOffset < s2.Offset {
				t.Fatalf("batch %d below the snapshot delivered", b.BaseOffset)
			}
		}
		plain.waitFor(t, func() bool { return len(plain.batches) > 0 && plain.batches[len(plain.batches)-1].BaseOffset == 92 })
		if plain.batches[0].BaseOffset != n2.Status().LogStartOffset {
			t.Fatalf("plain listener got %d below the log start", plain.batches[0].BaseOffset)
		}
	})
}

// TestSnapshotGenerator: metadata.log.max.record.bytes.between.snapshots
// triggers a snapshot of the source's image, written off the raft goroutine.
func TestSnapshotGenerator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fs := vfs.NewMemFS()
		cfg := snapshotTestConfig(fs, "/meta")
		cfg.Snapshots.MaxBytesBetweenSnapshots = 1000
		n, err := NewNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		img := newRecListener() // the "image": every committed batch
		n.Register(img)
		src := func() (SnapshotImage, bool) {
			img.mu.Lock()
			defer img.mu.Unlock()
			if len(img.batches) == 0 {
				return SnapshotImage{}, false
			}
			last := img.batches[len(img.batches)-1]
			var vals [][]byte
			for _, b := range img.batches {
				vals = append(vals, b.Records...)
			}
			return SnapshotImage{EndOffset: last.LastOffset + 1, Epoch: last.Epoch, LastContainedLogTimestamp: last.AppendTimeMs,
				Records: func() [][]byte { return vals }}, true
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		g := n.newSnapshotGenerator(src)
		made := make(chan OffsetAndEpoch, 100)
		g.onSnapshot = func(id OffsetAndEpoch, err error) {
			if err == nil {
				made <- id
			}
		}
		n.Register(g)
		for i := 0; i < 40; i++ {
			if _, err := n.Append(ctx, records(strings.Repeat("y", 100))); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if len(made) == 0 {
			t.Fatal("no snapshot after 40 batches of 100+ bytes with a 1000-byte trigger")
		}
		if snaps := n.core.Snapshots(); len(snaps) == 0 || snaps[len(snaps)-1].ID.Epoch != 1 {
			t.Fatalf("snapshots %v", snaps)
		}
	})
}

// stateSnapshot is a SnapshotImage of a values-list state machine.
func stateSnapshot(endOffset int64, epoch int32, vals []string) SnapshotImage {
	vals = slices.Clone(vals)
	return SnapshotImage{EndOffset: endOffset, Epoch: epoch, LastContainedLogTimestamp: 7, Records: func() [][]byte {
		var out [][]byte
		for _, v := range vals {
			out = append(out, []byte(v))
		}
		return out
	}}
}

// TestNodeSnapshotCatchUp: a voter is down while the leader snapshots and
// deletes its log; when it comes back its Fetch is answered with SnapshotId,
// it downloads the snapshot over FetchSnapshot (kmsg on the wire, 200-byte
// pages), loads it and continues from the snapshot's end offset.
func TestNodeSnapshotCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		c.snap = SnapshotConfig{MaxBytesBetweenSnapshots: 1 << 40, RetentionBytes: 1, RetentionMs: -1, SegmentBytes: 1024, FetchSnapshotMaxBytes: 200}
		defer c.closeAll()
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		l := c.leader()
		lid := l.cfg.NodeID
		away := int32(1)
		if away == lid {
			away = 2
		}
		var want []string
		appendN := func(k int) {
			t.Helper()
			for i := 0; i < k; i++ {
				v := fmt.Sprintf("v%03d-%s", len(want), strings.Repeat("z", 30))
				if _, err := l.Append(ctx, records(v)); err != nil {
					t.Fatal(err)
				}
				want = append(want, v)
			}
		}
		appendN(10)
		c.stop(away)
		appendN(30)
		epoch := l.LeaderAndEpoch().Epoch
		if _, err := l.CreateSnapshot(stateSnapshot(l.HighWatermark(), epoch, want)); err != nil {
			t.Fatal(err)
		}
		appendN(30)
		s2, err := l.CreateSnapshot(stateSnapshot(l.HighWatermark(), epoch, want))
		if err != nil {
			t.Fatal(err)
		}
		if st := l.Status(); st.LogStartOffset != s2.Offset {
			t.Fatalf("leader log start %d, want %d", st.LogStartOffset, s2.Offset)
		}
		appendN(5)

		c.start(away)
		sl := &snapListener{recListener: newRecListener()}
		c.nodes[away].Register(sl)
		appendN(1)
		sl.waitFor(t, func() bool { return slices.Equal(sl.values(), want) })
		n := c.nodes[away]
		if st := n.Status(); st.LogStartOffset != s2.Offset || st.LogEndOffset != l.Status().LogEndOffset {
			t.Fatalf("rejoined node: %+v", st)
		}
		if len(sl.snaps) != 1 || sl.snaps[0].ID != s2 {
			t.Fatalf("snapshots delivered to the rejoined node: %d", len(sl.snaps))
		}
		names := dirNames(t, c.fs[away], "/meta/__cluster_metadata-0")
		if !slices.Contains(names, SnapshotFileName(s2)) {
			t.Fatalf("no %s on the rejoined node: %v", SnapshotFileName(s2), names)
		}
		for _, nm := range names {
			if strings.HasSuffix(nm, ".part") {
				t.Fatalf("leftover %s", nm)
			}
		}
		// The downloaded snapshot survives a restart of the node.
		c.stop(away)
		c.start(away)
		sl2 := &snapListener{recListener: newRecListener()}
		c.nodes[away].Register(sl2)
		appendN(1)
		sl2.waitFor(t, func() bool { return slices.Equal(sl2.values(), want) })
	})
}

// TestNodeFetchSnapshotRPC: FetchSnapshot v0-1 on the leader: paging with
// Position/MaxBytes, SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, epoch and
// cluster id checks; Fetch answers SnapshotId at offset 0 and below the log start.
func TestNodeFetchSnapshotRPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		n, err := NewNode(snapshotTestConfig(vfs.NewMem(), "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		var vals []string
		for i := 0; i < 20; i++ {
			vals = append(vals, fmt.Sprintf("r%d", i))
			if _, err := n.Append(ctx, records(vals[i])); err != nil {
				t.Fatal(err)
			}
		}
		id, err := n.CreateSnapshot(stateSnapshot(n.HighWatermark(), 1, vals))
		if err != nil {
			t.Fatal(err)
		}
		file, err := vfs.ReadFile(n.cfg.FS, filepath.Join("/meta/__cluster_metadata-0", SnapshotFileName(id)))
		if err != nil {
			t.Fatal(err)
		}
		fetchSnap := func(version int16, cluster *string, topic string, epoch int32, sid OffsetAndEpoch, pos int64, maxBytes int32) *kmsg.FetchSnapshotResponse {
			t.Helper()
			r := kmsg.NewPtrFetchSnapshotRequest()
			r.Version, r.ClusterID, r.ReplicaID, r.MaxBytes = version, cluster, 2, maxBytes
			tp := kmsg.NewFetchSnapshotRequestTopic()
			tp.Topic = topic
			p := kmsg.NewFetchSnapshotRequestTopicPartition()
			p.CurrentLeaderEpoch, p.Position = epoch, pos
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = sid.Offset, sid.Epoch
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			resp, err := n.HandleRequest(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.FetchSnapshotResponse)
		}
		cid := "cluster"
		// paging: the whole file in 100-byte pages, both versions
		for _, v := range []int16{0, 1} {
			var got []byte
			for pos := int64(0); pos < int64(len(file)); {
				resp := fetchSnap(v, &cid, MetadataTopic, 1, id, pos, 100)
				p := resp.Topics[0].Partitions[0]
				if resp.ErrorCode != 0 || p.ErrorCode != 0 || p.Size != int64(len(file)) || p.Position != pos ||
					p.SnapshotID.EndOffset != id.Offset || p.SnapshotID.Epoch != id.Epoch || len(p.Bytes) == 0 || len(p.Bytes) > 100 ||
					p.CurrentLeader.LeaderID != 1 || p.CurrentLeader.LeaderEpoch != 1 {
					t.Fatalf("v%d page at %d: %+v", v, pos, resp)
				}
				got = append(got, p.Bytes...)
				pos += int64(len(p.Bytes))
			}
			if !bytes.Equal(got, file) {
				t.Fatalf("v%d: paged bytes differ from the file", v)
			}
		}
		for _, tc := range []struct {
			name    string
			cluster string
			topic   string
			epoch   int32
			sid     OffsetAndEpoch
			pos     int64
			top     int16
			part    int16
		}{
			{"unknown snapshot", cid, MetadataTopic, 1, OffsetAndEpoch{Offset: 3, Epoch: 1}, 0, 0, kerr.SnapshotNotFound.Code},
			{"position at size", cid, MetadataTopic, 1, id, int64(len(file)), 0, kerr.PositionOutOfRange.Code},
			{"negative position", cid, MetadataTopic, 1, id, -1, 0, kerr.PositionOutOfRange.Code},
			{"old epoch", cid, MetadataTopic, 0, id, 0, 0, kerr.FencedLeaderEpoch.Code},
			{"future epoch", cid, MetadataTopic, 2, id, 0, 0, kerr.UnknownLeaderEpoch.Code},
			{"other topic", cid, "foo", 1, id, 0, 0, kerr.UnknownTopicOrPartition.Code},
			{"other cluster", "nope", MetadataTopic, 1, id, 0, kerr.InconsistentClusterID.Code, 0},
		} {
			resp := fetchSnap(1, &tc.cluster, tc.topic, tc.epoch, tc.sid, tc.pos, 100)
			var part int16
			if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				part = resp.Topics[0].Partitions[0].ErrorCode
			}
			if resp.ErrorCode != tc.top || part != tc.part {
				t.Errorf("%s: errors %d/%d, want %d/%d", tc.name, resp.ErrorCode, part, tc.top, tc.part)
			}
		}

		fetch := func(offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
			t.Helper()
			r := kmsg.NewPtrFetchRequest()
			r.Version, r.ClusterID, r.ReplicaID = 17, &cid, -1
			r.ReplicaState.ID = -1
			tp := kmsg.NewFetchRequestTopic()
			tp.Topic, tp.TopicID = MetadataTopic, MetadataTopicID
			p := kmsg.NewFetchRequestTopicPartition()
			p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = 1, offset, lastEpoch
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			resp, err := n.HandleRequest(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		}
		// an empty log fetching from 0 is sent to the snapshot at once
		if p := fetch(0, 0); p.SnapshotID.EndOffset != id.Offset || p.SnapshotID.Epoch != id.Epoch || len(p.RecordBatches) != 0 {
			t.Fatalf("fetch at 0: %+v", p)
		}
		// from inside the log: records, no snapshot
		if p := fetch(5, 1); p.SnapshotID.EndOffset != -1 || len(p.RecordBatches) == 0 {
			t.Fatalf("fetch at 5: %+v", p)
		}
		// a second snapshot moves the log start (retention): below it, SnapshotId
		for i := 0; i < 5; i++ {
			vals = append(vals, fmt.Sprintf("s%d", i))
			if _, err := n.Append(ctx, records(vals[len(vals)-1])); err != nil {
				t.Fatal(err)
			}
		}
		id2, err := n.CreateSnapshot(stateSnapshot(n.HighWatermark(), 1, vals))
		if err != nil {
			t.Fatal(err)
		}
		if p := fetch(5, 1); p.SnapshotID.EndOffset != id2.Offset || p.LogStartOffset != id2.Offset {
			t.Fatalf("fetch below the log start: %+v", p)
		}
		if resp := fetchSnap(1, &cid, MetadataTopic, 1, id, 0, 100); resp.Topics[0].Partitions[0].ErrorCode != kerr.SnapshotNotFound.Code {
			t.Fatalf("deleted snapshot still served: %+v", resp)
		}
	})
}

// TestNodeSnapshotRecovery: at start, .part and .deleted files go, and a
// snapshot newer than the log (a follower that crashed after freezing a
// downloaded snapshot, before truncating) truncates the log fully.
func TestNodeSnapshotRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fs := vfs.NewMemFS()
		pdir := "/meta/__cluster_metadata-0"
		n, err := NewNode(snapshotTestConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for i := 0; i < 10; i++ {
			vals = append(vals, fmt.Sprintf("a%d", i))
			if _, err := n.Append(ctx, records(vals[i])); err != nil {
				t.Fatal(err)
			}
		}
		old, err := n.CreateSnapshot(stateSnapshot(n.HighWatermark(), 1, vals))
		if err != nil {
			t.Fatal(err)
		}
		n.Close()
		newer := OffsetAndEpoch{Offset: 100, Epoch: 5}
		want := []string{"x", "y", "z"}
		for name, content := range map[string][]byte{
			"00000000000000000100-0000000005-abc.checkpoint.part": []byte("partial"),
			"00000000000000000011-0000000001.checkpoint.deleted":  []byte("old"),
			SnapshotFileName(newer):                               EncodeSnapshot(newer, 1, 1, records(want...)),
		} {
			if err := writeSynced(fs, filepath.Join(pdir, name), content); err != nil {
				t.Fatal(err)
			}
		}
		n2, err := NewNode(snapshotTestConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		l := &snapListener{recListener: newRecListener()}
		n2.Register(l)
		if err := n2.Start(); err != nil {
			t.Fatal(err)
		}
		defer n2.Close()
		names := dirNames(t, fs, pdir)
		for _, nm := range names {
			if strings.HasSuffix(nm, ".part") || strings.HasSuffix(nm, ".checkpoint.deleted") || nm == SnapshotFileName(old) {
				t.Fatalf("%s survived recovery: %v", nm, names)
			}
		}
		if st := n2.Status(); st.LogStartOffset != 100 || st.Epoch <= 5 {
			t.Fatalf("after recovery: %+v", st)
		}
		if _, err := n2.Append(ctx, records("w")); err != nil {
			t.Fatal(err)
		}
		want = append(want, "w")
		l.waitFor(t, func() bool { return slices.Equal(l.values(), want) })
	})
}

// TestNodeSnapshotWriteFailure: a snapshot whose fsync fails is not frozen
// (no .checkpoint, no .part left) and the node keeps working; the next
// attempt succeeds.
func TestNodeSnapshotWriteFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var sw vfs.Switch
		fs := vfs.NewInjecting(vfs.NewMem(), sw.Inject)
		n, err := NewNode(snapshotTestConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		vals := []string{"a", "b"}
		if _, err := n.Append(ctx, records(vals...)); err != nil {
			t.Fatal(err)
		}
		sw.Set(vfs.FailAfter(vfs.OpSync, 0, func(p string) bool { return strings.HasSuffix(p, snapshotPartSuffix) }))
		if _, err := n.CreateSnapshot(stateSnapshot(n.HighWatermark(), 1, vals)); !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("snapshot with a failing fsync: %v", err)
		}
		sw.Set(nil)
		for _, nm := range dirNames(t, fs, "/meta/__cluster_metadata-0") {
			if strings.Contains(nm, ".checkpoint") {
				t.Fatalf("%s left by a failed snapshot", nm)
			}
		}
		if _, err := n.Append(ctx, records("c")); err != nil {
			t.Fatalf("append after a failed snapshot: %v", err)
		}
		if _, err := n.CreateSnapshot(stateSnapshot(n.HighWatermark(), 1, append(vals, "c"))); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSnapshotGeneratorInterval: metadata.log.max.snapshot.interval.ms on an
// injected clock: a commit after the interval triggers a snapshot, one
// before it does not.
func TestSnapshotGeneratorInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var mu sync.Mutex
		now := time.Unix(1_800_000_000, 0)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		cfg := snapshotTestConfig(vfs.NewMem(), "/meta")
		cfg.Now = clock
		cfg.Snapshots.MaxInterval = time.Hour
		n, err := NewNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		img := newRecListener()
		n.Register(img)
		var vals []string
		src := func() (SnapshotImage, bool) {
			img.mu.Lock()
			defer img.mu.Unlock()
			if len(img.batches) == 0 {
				return SnapshotImage{}, false
			}
			last := img.batches[len(img.batches)-1]
			return stateSnapshot(last.LastOffset+1, last.Epoch, vals), true
		}
		g := n.newSnapshotGenerator(src)
		made := make(chan OffsetAndEpoch, 10)
		g.onSnapshot = func(id OffsetAndEpoch, err error) {
			if err == nil {
				made <- id
			}
		}
		n.Register(g)
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		appendOne := func(v string) {
			vals = append(vals, v)
			if _, err := n.Append(ctx, records(v)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		appendOne("a")
		advance(59 * time.Minute)
		appendOne("b")
		if len(made) != 0 {
			t.Fatalf("snapshot before the interval: %v", <-made)
		}
		advance(2 * time.Minute)
		appendOne("c")
		if len(made) != 1 {
			t.Fatalf("%d snapshots after the interval", len(made))
		}
		// the image is another listener: it may not have "c" yet
		if id := <-made; id.Offset != 3 && id.Offset != 4 {
			t.Fatalf("snapshot %+v, want end offset 3 or 4", id)
		}
		appendOne("d") // the interval restarts with the snapshot
		if len(made) != 0 {
			t.Fatal("snapshot right after a snapshot")
		}
	})
}

// FuzzDecodeSnapshot: a snapshot file (downloaded from a leader or read at
// start) never panics the decoder; what it accepts re-encodes to the same records.
func FuzzDecodeSnapshot(f *testing.F) {
	id := OffsetAndEpoch{Offset: 10, Epoch: 2}
	f.Add(EncodeSnapshot(id, 5, 6, records("a", "bb", "")))
	f.Add(EncodeSnapshot(id, 0, 0, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(id, b)
		if err != nil {
			return
		}
		again, err := DecodeSnapshot(id, EncodeSnapshot(id, s.LastContainedLogTimestamp, 0, s.Records()))
		if err != nil || !slices.EqualFunc(again.Records(), s.Records(), bytes.Equal) {
			t.Fatalf("re-encoded snapshot differs: %v", err)
		}
	})
}

// BenchmarkSnapshotEncodeDecode: a snapshot of 11,000 records of 100 bytes
// (about 1,000 topics of 10 partitions).
func BenchmarkSnapshotEncodeDecode(b *testing.B) {
	id := OffsetAndEpoch{Offset: 1 << 20, Epoch: 3}
	recs := make([][]byte, 11000)
	for i := range recs {
		recs[i] = bytes.Repeat([]byte{byte(i)}, 100)
	}
	b.ReportAllocs()
	for b.Loop() {
		enc := EncodeSnapshot(id, 1, 2, recs)
		b.SetBytes(int64(len(enc)))
		if _, err := DecodeSnapshot(id, enc); err != nil {
			b.Fatal(err)
		}
	}
}
