package broker

// The broker side of KIP-858 directory assignment (Kafka's
// ReplicaManager.maybeUpdateTopicAssignment and AssignmentsManager): from
// metadata.version 3.7-IV2, when the directory the metadata names for one of
// this broker's replicas is not the log dir its log is in (a partition
// created while the broker has several log dirs is UNASSIGNED), the broker
// tells the active controller with AssignReplicasToDirs (73), batched (at most
// 2250 partitions a request, AssignmentsManager.MAX_ASSIGNMENTS_PER_REQUEST),
// with its broker epoch, and retries what was not accepted after a backoff.
//
// One goroutine owns the state; images arrive on a channel that keeps only
// the newest, so nothing here needs a lock.

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

const (
	maxAssignmentsPerRequest = 2250
	dirAssignmentBackoff     = 500 * time.Millisecond
)

type tipKey struct {
	topicID   [16]byte
	partition int32
}

// misassigned lists this broker's replicas in img whose log is in another
// directory than the metadata names (by id, dirID maps a log dir to its
// directory.id), with the directory they are in. Below 3.7-IV2 nothing is.
func misassigned(img *metadatacache.Image, nodeID int32, logDirOf func(storage.TopicPartition) (string, bool), dirID map[string][16]byte) map[tipKey][16]byte {
	if img == nil || img.MetadataVersion() < metadatacache.MV3_7_IV2 {
		return nil
	}
	out := map[tipKey][16]byte{}
	for _, t := range img.Topics() {
		for pid, p := range t.Partitions {
			idx := slices.Index(p.Replicas, nodeID)
			if idx < 0 {
				continue
			}
			dir, ok := logDirOf(storage.TopicPartition{Topic: t.Name, Partition: pid})
			if !ok {
				continue
			}
			actual, ok := dirID[dir]
			if !ok {
				continue
			}
			var named [16]byte
			if len(p.Directories) == len(p.Replicas) {
				named = p.Directories[idx]
			}
			if named != actual {
				out[tipKey{t.ID, pid}] = actual
			}
		}
	}
	return out
}

// assignmentsRequest builds one AssignReplicasToDirs request of at most
// maxAssignmentsPerRequest entries of pending, in a stable order.
func assignmentsRequest(nodeID int32, epoch int64, pending map[tipKey][16]byte) (*kmsg.AssignReplicasToDirsRequest, []tipKey) {
	keys := make([]tipKey, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topicID != keys[j].topicID {
			return string(keys[i].topicID[:]) < string(keys[j].topicID[:])
		}
		return keys[i].partition < keys[j].partition
	})
	if len(keys) > maxAssignmentsPerRequest {
		keys = keys[:maxAssignmentsPerRequest]
	}
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = nodeID, epoch
	dirs := map[[16]byte]int{}
	for _, k := range keys {
		d := pending[k]
		di, ok := dirs[d]
		if !ok {
			rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
			rd.ID = d
			req.Directories = append(req.Directories, rd)
			di = len(req.Directories) - 1
			dirs[d] = di
		}
		rd := &req.Directories[di]
		if n := len(rd.Topics); n == 0 || rd.Topics[n-1].TopicID != k.topicID {
			rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			rt.TopicID = k.topicID
			rd.Topics = append(rd.Topics, rt)
		}
		rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
		rp.Partition = k.partition
		rd.Topics[len(rd.Topics)-1].Partitions = append(rd.Topics[len(rd.Topics)-1].Partitions, rp)
	}
	return req, keys
}

// dirAssigner reports misassigned replicas to the controller.
type dirAssigner struct {
	nodeID   int32
	dirID    map[string][16]byte
	logDirOf func(storage.TopicPartition) (string, bool)
	epoch    func() int64 // -1 until registered
	send     func(context.Context, kmsg.Request) (kmsg.Response, error)
	log      *zap.Logger
	images   chan *metadatacache.Image // the newest image, capacity 1
	// kick asks for a scan of the current image (a replica moved to
	// another log dir, KIP-113), capacity 1.
	kick chan struct{}
}

// rescan makes the assigner look at the current image again: a replica's
// log moved to another log dir (replication/alterlogdirs.go).
func (a *dirAssigner) rescan() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func newDirAssigner(nodeID int32, dirID map[string][16]byte, logDirOf func(storage.TopicPartition) (string, bool),
	epoch func() int64, send func(context.Context, kmsg.Request) (kmsg.Response, error), log *zap.Logger) *dirAssigner {
	return &dirAssigner{nodeID: nodeID, dirID: dirID, logDirOf: logDirOf, epoch: epoch, send: send, log: log,
		images: make(chan *metadatacache.Image, 1), kick: make(chan struct{}, 1)}
}

// onImage is the metadata cache subscription: it keeps only the newest image.
func (a *dirAssigner) onImage(_, img *metadatacache.Image) {
	for {
		select {
		case a.images <- img:
			return
		default:
		}
		select {
		case <-a.images:
		default:
		}
	}
}

func (a *dirAssigner) run(ctx context.Context) {
	var (
		img, scanned *metadatacache.Image
		pending      map[tipKey][16]byte
		retry        <-chan time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case img = <-a.images:
			// Most images (a NoOpRecord every metadata.max.idle.interval.ms)
			// change no partition: nothing to look at again.
			if len(pending) == 0 && scanned != nil && img != nil && img.SameTopics(scanned) &&
				img.MetadataVersion() == scanned.MetadataVersion() {
				continue
			}
		case <-retry:
			retry = nil
		case <-a.kick:
		}
		scanned = img
		pending = misassigned(img, a.nodeID, a.logDirOf, a.dirID)
		if len(pending) == 0 {
			continue
		}
		epoch := a.epoch()
		if epoch < 0 {
			retry = time.After(dirAssignmentBackoff)
			continue
		}
		req, keys := assignmentsRequest(a.nodeID, epoch, pending)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		kresp, err := a.send(rctx, req)
		cancel()
		failed := len(keys)
		if err == nil {
			resp := kresp.(*kmsg.AssignReplicasToDirsResponse)
			failed = 0
			if resp.ErrorCode != 0 {
				failed = len(keys)
			}
			for _, d := range resp.Directories {
				for _, t := range d.Topics {
					for _, p := range t.Partitions {
						if p.ErrorCode != 0 {
							failed++
						}
					}
				}
			}
			if failed > 0 {
				a.log.Debug("AssignReplicasToDirs: some assignments were not accepted; retrying",
					zap.Int16("error", resp.ErrorCode), zap.Int("failed", failed), zap.Int("sent", len(keys)))
			}
		} else {
			a.log.Debug("AssignReplicasToDirs failed; retrying", zap.Error(err))
		}
		// What was accepted shows in the next image; the rest (and the
		// rest of a big backlog) is tried again after the backoff, against
		// the image then.
		if failed > 0 || len(keys) < len(pending) {
			retry = time.After(dirAssignmentBackoff)
		}
	}
}
