package replication

import (
	"cmp"
	"math"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// LogDirLister is what DescribeLogDirs needs of the LogManager (a
// *storage.Manager has it): the configured log dirs and every log.
type LogDirLister interface {
	LogDirs() []string
	Logs() map[storage.TopicPartition]*storage.Log
}

// DescribeLogDirs serves DescribeLogDirs (ReplicaManager.describeLogDirs):
// one entry per log dir (its absolute path) listing every topic with logs
// in it and, of those, the requested partitions (all when Topics is null)
// with their size in bytes, offset lag 0 and is_future false, and the future
// replicas of moves between log dirs (KIP-113) with is_future true and their
// lag behind the current replica; v4 adds the
// file system's total and usable bytes (statfs; Long.MAX_VALUE when the
// value overflows, as Kafka's adjustForLargeFileSystems does). A dir that
// cannot be examined, or is offline, answers KAFKA_STORAGE_ERROR with no
// topics.
func (rm *ReplicaManager) DescribeLogDirs(req *kmsg.DescribeLogDirsRequest) *kmsg.DescribeLogDirsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	lister, ok := rm.cfg.Logs.(LogDirLister)
	if !ok {
		return resp
	}
	var want map[storage.TopicPartition]bool
	if req.Topics != nil {
		want = map[storage.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[storage.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	type replica struct {
		tp     storage.TopicPartition
		log    *storage.Log
		future bool // KIP-113: the future replica of a move between log dirs
	}
	byDir := map[string][]replica{}
	logs := lister.Logs()
	add := func(tp storage.TopicPartition, l *storage.Log, future bool) {
		if tp.Topic == "__cluster_metadata" {
			return
		}
		dir, err := filepath.Abs(filepath.Dir(l.Dir()))
		if err != nil {
			dir = filepath.Dir(l.Dir())
		}
		byDir[dir] = append(byDir[dir], replica{tp, l, future})
	}
	for tp, l := range logs {
		add(tp, l, false)
	}
	if fl, ok := rm.cfg.Logs.(FutureLogManager); ok {
		for tp, l := range fl.FutureLogs() {
			add(tp, l, true)
		}
	}
	for _, d := range lister.LogDirs() {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = abs
		if o, ok := lister.(interface{ DirOffline(string) bool }); ok && o.DirOffline(d) {
			// KIP-112: an offline dir answers KAFKA_STORAGE_ERROR and nothing else
			// (ReplicaManager.describeLogDirs throws KafkaStorageException for it)
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		if req.Version >= 4 {
			rd.TotalBytes, rd.UsableBytes = diskSpace(abs)
		}
		reps := byDir[abs]
		slices.SortFunc(reps, func(a, b replica) int {
			return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
		})
		for _, r := range reps {
			tp := r.tp
			if n := len(rd.Topics); n == 0 || rd.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = tp.Topic
				t.Partitions = []kmsg.DescribeLogDirsResponseDirTopicPartition{}
				rd.Topics = append(rd.Topics, t)
			}
			if want != nil && !want[tp] {
				continue
			}
			p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			p.Partition = tp.Partition
			p.Size = r.log.Size()
			if r.future {
				// getLogEndOffsetLag: how far the future replica is behind
				// the current one
				p.IsFuture = true
				if cur, ok := logs[tp]; ok {
					p.OffsetLag = max(cur.LogEndOffset()-r.log.LogEndOffset(), 0)
				}
			}
			t := &rd.Topics[len(rd.Topics)-1]
			t.Partitions = append(t.Partitions, p)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp
}

// diskSpace returns the total and usable bytes of the file system holding
// dir, (-1, -1) when it cannot be examined (e.g. an in-memory test FS).
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	adjust := func(blocks uint64) int64 {
		v := blocks * uint64(st.Bsize)
		if st.Bsize != 0 && v/uint64(st.Bsize) != blocks || v > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(v)
	}
	return adjust(st.Blocks), adjust(st.Bavail)
}
