package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// newTwoDirNode builds (without starting) a combined node on two log dirs, d1
// holding the metadata log, on fs.
func newTwoDirNode(t *testing.T, d1, d2 string, fs vfs.FS) (*Node, string) {
	t.Helper()
	pp, cp := freePort(t), freePort(t)
	cfg, err := config.SingleNode(map[string]string{
		"listeners":                    "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp) + ",CONTROLLER://127.0.0.1:" + strconv.Itoa(cp),
		"advertised.listeners":         "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp),
		"controller.quorum.voters":     "1@127.0.0.1:" + strconv.Itoa(cp),
		"log.dirs":                     d1 + "," + d2,
		"broker.heartbeat.interval.ms": "100",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetadataLogDir != d1 {
		t.Fatalf("metadata log dir %s", cfg.MetadataLogDir)
	}
	ids := map[string][16]byte{d1: formatDir(t, d1), d2: formatDir(t, d2)}
	n, err := NewNode(NodeConfig{Config: cfg, ClusterID: testClusterID, DirectoryIDs: ids, Logger: zaptest.NewLogger(t), FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	return n, "127.0.0.1:" + strconv.Itoa(pp)
}

func stopNode(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// partitionIn returns the partition of topic whose directory is in dir.
func partitionIn(t *testing.T, dir, topic string) int32 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if p, ok := strings.CutPrefix(e.Name(), topic+"-"); ok && e.IsDir() {
			n, err := strconv.Atoi(p)
			if err == nil {
				return int32(n)
			}
		}
	}
	t.Fatalf("no partition of %s in %s", topic, dir)
	return -1
}

// A log dir that fails to load (an I/O error opening a partition's segment) is
// offline from the start: the node starts and serves the other dir, leaves the
// failed dir out of its registration's LogDirs (KIP-858: the broker registers its
// online dirs) and reports it in its heartbeats' OfflineLogDirs. A failed
// metadata log dir stops the startup (ReplicaManager.handleLogDirFailure halts).
func TestNodeLogDirFailedAtStartup(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d2")
	for _, d := range []string{d1, d2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n, addr := newTwoDirNode(t, d1, d2, nil)
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("two"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "two"); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		for i := range 3 {
			r := kgo.StringRecord(fmt.Sprint(i))
			r.Partition = p
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl.Close()
	stopNode(t, n)
	inD1, inD2 := partitionIn(t, d1, "two"), partitionIn(t, d2, "two")

	fail := func(partDir string) vfs.FS {
		return vfs.NewInjecting(vfs.Default, func(op vfs.Op) vfs.Fault {
			if op.Kind == vfs.OpOpen && strings.HasPrefix(op.Path, partDir+string(filepath.Separator)) && strings.HasSuffix(op.Path, ".log") {
				return vfs.Fault{Err: vfs.ErrInjected}
			}
			return vfs.Fault{}
		})
	}
	n, addr = newTwoDirNode(t, d1, d2, fail(filepath.Join(d2, "two-"+strconv.Itoa(int(inD2)))))
	if err := n.Start(); err != nil {
		t.Fatalf("a failed log dir must not stop the node: %v", err)
	}
	defer stopNode(t, n)
	if got := n.logs.OfflineDirs(); len(got) != 1 || got[0] != d2 {
		t.Fatalf("offline dirs %v", got)
	}
	id1, id2 := n.nc.DirectoryIDs[d1], n.nc.DirectoryIDs[d2]
	if got := n.lifecycle.registration.LogDirs; len(got) != 1 || got[0] != id1 {
		t.Fatalf("registration LogDirs %v, want only %v", got, id1)
	}
	if got := n.lifecycle.offlineDirs(); len(got) != 1 || got[0] != id2 {
		t.Fatalf("heartbeat OfflineLogDirs %v, want %v", got, id2)
	}
	for _, b := range n.cache.Image().Brokers() {
		if b.ID == 1 && (len(b.Directories) != 1 || b.Directories[0] != id1) {
			t.Fatalf("registered directories %v", b.Directories)
		}
	}
	// the partition in the online dir is served
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"two": {inD1: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("records of two-%d: %v", inD1, got)
	}
	stopNode(t, n)

	// at run time: the non-metadata dir failing leaves the node up; then the
	// metadata log dir failing halts it (Fatal)
	n, _ = newTwoDirNode(t, d1, d2, nil)
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	n.logs.FailDir(d2, vfs.ErrInjected)
	select {
	case err := <-n.Fatal():
		t.Fatalf("one of two dirs failed, not the metadata one: %v", err)
	default:
	}
	n.logs.FailDir(d1, vfs.ErrInjected)
	select {
	case err := <-n.Fatal():
		if !strings.Contains(err.Error(), "metadata log dir "+d1+" has failed") {
			t.Fatalf("fatal: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the metadata log dir failed and the node goes on")
	}
	stopNode(t, n)

	// the metadata log dir failing stops the node
	n, _ = newTwoDirNode(t, d1, d2, fail(filepath.Join(d1, "two-"+strconv.Itoa(int(inD1)))))
	err = n.Start()
	if err == nil || !strings.Contains(err.Error(), "metadata log dir "+d1+" has failed") {
		t.Fatalf("start with the metadata log dir failed: %v", err)
	}
}

// A log dir whose meta.properties cannot be read (here a directory) is offline
// from the start (NodeConfig.OfflineLogDirs, Kafka's errorLogDirs): the node
// starts and serves the other dir; its directory.id is unknown, so it is neither
// registered nor named in heartbeats (as in Kafka). The metadata log dir among
// them stops the startup (MetaPropertiesEnsemble.verify).
func TestNodeUnreadableMetaProperties(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d2")
	for _, d := range []string{d1, d2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n, addr := newTwoDirNode(t, d1, d2, nil)
	if err := os.Remove(filepath.Join(d2, config.MetaPropertiesFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d2, config.MetaPropertiesFile), 0o755); err != nil {
		t.Fatal(err)
	}
	id1 := n.nc.DirectoryIDs[d1]
	delete(n.nc.DirectoryIDs, d2)
	n.nc.OfflineLogDirs = []string{d2}
	if err := n.Start(); err != nil {
		t.Fatalf("an unreadable meta.properties must not stop the node: %v", err)
	}
	defer stopNode(t, n)
	if got := n.logs.OfflineDirs(); len(got) != 1 || got[0] != d2 {
		t.Fatalf("offline dirs %v", got)
	}
	if got := n.lifecycle.registration.LogDirs; len(got) != 1 || got[0] != id1 {
		t.Fatalf("registration LogDirs %v, want only %v", got, id1)
	}
	if got := n.lifecycle.offlineDirs(); len(got) != 0 {
		t.Fatalf("heartbeat OfflineLogDirs %v: the dir has no known id", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("one"), kgo.ConsumeTopics("one"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "one"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 4 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 4 {
		t.Fatalf("records %v", got)
	}
	ents, err := os.ReadDir(d2)
	if err != nil || len(ents) != 1 {
		t.Fatalf("the offline dir was written to: %v %v", ents, err)
	}
	stopNode(t, n)

	if err := os.Remove(filepath.Join(d2, config.MetaPropertiesFile)); err != nil {
		t.Fatal(err)
	}
	n, _ = newTwoDirNode(t, d1, d2, nil)
	n.nc.OfflineLogDirs = []string{d1}
	err = n.Start()
	if err == nil || !strings.Contains(err.Error(), "Encountered I/O error in metadata log directory "+d1+". Cannot continue.") {
		t.Fatalf("start with the metadata log dir unreadable: %v", err)
	}
}

// A failed write of the metadata log (the raft log, not a partition) halts
// the node: Kafka's raft IO thread hands the error to its fatal fault
// handler. Without it the node went on serving with raft stopped.
func TestNodeMetadataLogWriteErrorIsFatal(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d2")
	for _, d := range []string{d1, d2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var sw vfs.Switch
	n, addr := newTwoDirNode(t, d1, d2, vfs.NewInjecting(vfs.Default, sw.Inject))
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	// The raft error comes back from Shutdown too; main halts on Fatal
	// without one, this only releases the listeners.
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	}()
	meta := filepath.Join(d1, "__cluster_metadata-0") + string(filepath.Separator)
	sw.Set(func(op vfs.Op) vfs.Fault {
		if (op.Kind == vfs.OpWrite || op.Kind == vfs.OpSync) && strings.HasPrefix(op.Path, meta) {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	// Creating a topic appends to the metadata log.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "meta-write-fails")
	select {
	case err := <-n.Fatal():
		if !strings.Contains(err.Error(), "raft") || !strings.Contains(err.Error(), vfs.ErrInjected.Error()) {
			t.Fatalf("fatal: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the metadata log write failed and the node goes on")
	}
	if len(n.logs.OfflineDirs()) != 0 {
		t.Fatalf("no partition write failed, yet offline dirs %v", n.logs.OfflineDirs())
	}
}
