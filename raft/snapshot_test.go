package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

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
			if strings.HasSuffix(nm, ".part") || strings.HasSuffix(nm, ".deleted") {
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
