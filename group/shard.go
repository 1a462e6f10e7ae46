package group

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

type shardState uint8

const (
	shardLoading shardState = iota
	shardActive
	shardClosed
)

// shard is the coordinator state of one __consumer_offsets partition
// (Kafka's GroupCoordinatorShard): its groups and committed offsets, and
// the timers acting on them. Everything is guarded by mu.
type shard struct {
	c         *Coordinator
	partition int32
	epoch     int32

	mu     sync.Mutex
	state  shardState
	groups map[string]*classicGroup
	cgs    map[string]*consumerGroup
	// offsets[group][topic][partition]
	offsets map[string]map[string]map[int32]offsetEntry
	timers  map[string]timerEntry
	seq     uint64
	// loadFailed is set when replaying the log failed; read without mu.
	loadFailed atomic.Bool
}

type timerEntry struct {
	t   Timer
	seq uint64
}

// offsetEntry is a committed offset (Kafka's OffsetAndMetadata).
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
	expireTs    int64 // -1: none (v1 value records only)
}

func newShard(c *Coordinator, partition, epoch int32) *shard {
	return &shard{
		c: c, partition: partition, epoch: epoch, state: shardLoading,
		groups:  map[string]*classicGroup{},
		cgs:     map[string]*consumerGroup{},
		offsets: map[string]map[string]map[int32]offsetEntry{},
		timers:  map[string]timerEntry{},
	}
}

func (s *shard) nowMs() int64 { return s.c.clock.Now().UnixMilli() }

// load replays the partition log into the shard, then activates it and
// starts the members' session timers (Kafka's onLoaded).
func (s *shard) load() {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != shardLoading {
		return
	}
	n := 0
	err := s.c.cfg.Store.Replay(s.partition, func(k, v []byte) {
		n++
		s.replay(k, v)
	})
	if err != nil {
		s.c.log.Error("loading group coordinator partition failed", zap.Int32("partition", s.partition), zap.Error(err))
		s.state = shardClosed
		s.loadFailed.Store(true)
		return
	}
	s.state = shardActive
	for _, g := range s.groups {
		for _, m := range g.members {
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
	for _, g := range s.cgs {
		s.onConsumerGroupLoaded(g)
	}
	logf := s.c.log.Info
	if n == 0 {
		logf = s.c.log.Debug
	}
	logf("loaded group coordinator partition", zap.Int32("partition", s.partition), zap.Int32("epoch", s.epoch),
		zap.Int("records", n), zap.Int("classic_groups", len(s.groups)), zap.Int("consumer_groups", len(s.cgs)),
		zap.Duration("took", time.Since(start)))
}

// unload stops the shard: timers are cancelled and parked requests answer
// NOT_COORDINATOR, so clients look the coordinator up again.
func (s *shard) unload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = shardClosed
	for k, e := range s.timers {
		e.t.Stop()
		delete(s.timers, k)
	}
	for _, g := range s.groups {
		for _, m := range g.members {
			g.completeJoin(m, &kmsg.JoinGroupResponse{ErrorCode: kerr.NotCoordinator.Code, MemberID: m.id})
			g.completeSync(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.NotCoordinator.Code})
		}
	}
}

// schedule runs op under the shard lock after d, replacing any timer with
// the same key (Kafka's CoordinatorTimer.schedule).
func (s *shard) schedule(key string, d time.Duration, op func()) {
	s.cancel(key)
	s.seq++
	seq := s.seq
	t := s.c.clock.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		e, ok := s.timers[key]
		if !ok || e.seq != seq || s.state != shardActive {
			return
		}
		delete(s.timers, key)
		op()
	})
	s.timers[key] = timerEntry{t: t, seq: seq}
}

func (s *shard) cancel(key string) {
	if e, ok := s.timers[key]; ok {
		e.t.Stop()
		delete(s.timers, key)
	}
}

func (s *shard) hasTimer(key string) bool { _, ok := s.timers[key]; return ok }

// write appends records to the partition and waits for them to commit.
// Called with mu held; errors are already mapped for group clients.
func (s *shard) write(recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.CommitTimeout)
	defer cancel()
	if err := s.c.cfg.Store.Append(ctx, s.partition, recs, s.nowMs()); err != nil {
		s.c.log.Warn("writing group records failed", zap.Int32("partition", s.partition), zap.Error(err))
		return appendErr(err)
	}
	return nil
}

// replay applies one record read back from the log.
func (s *shard) replay(k, v []byte) {
	if len(k) < 2 {
		return
	}
	switch ver := int16(binary.BigEndian.Uint16(k)); ver {
	case 0, 1:
		var key kmsg.OffsetCommitKey
		if key.ReadFrom(k) != nil {
			return
		}
		if v == nil {
			s.deleteOffset(key.Group, key.Topic, key.Partition)
			return
		}
		var val kmsg.OffsetCommitValue
		if val.ReadFrom(v) != nil {
			return
		}
		o := offsetEntry{offset: val.Offset, leaderEpoch: val.LeaderEpoch, metadata: val.Metadata, commitTs: val.CommitTimestamp, expireTs: -1}
		if val.Version < 3 {
			o.leaderEpoch = -1
		}
		if val.Version == 1 {
			o.expireTs = val.ExpireTimestamp
		}
		if s.groups[key.Group] == nil && s.cgs[key.Group] == nil {
			s.groups[key.Group] = newClassicGroup(key.Group, s.nowMs())
		}
		s.setOffset(key.Group, key.Topic, key.Partition, o)
	case 2:
		var key kmsg.GroupMetadataKey
		if key.ReadFrom(k) != nil {
			return
		}
		if v == nil {
			delete(s.groups, key.Group)
			return
		}
		var val kmsg.GroupMetadataValue
		if val.ReadFrom(v) != nil {
			return
		}
		delete(s.cgs, key.Group)
		s.groups[key.Group] = classicGroupFromRecord(key.Group, &val)
	default:
		s.replayConsumer(ver, k, v)
	}
}

func (s *shard) setOffset(group, topic string, partition int32, o offsetEntry) {
	g := s.offsets[group]
	if g == nil {
		g = map[string]map[int32]offsetEntry{}
		s.offsets[group] = g
	}
	t := g[topic]
	if t == nil {
		t = map[int32]offsetEntry{}
		g[topic] = t
	}
	t[partition] = o
}

func (s *shard) deleteOffset(group, topic string, partition int32) {
	g := s.offsets[group]
	if g == nil {
		return
	}
	if t := g[topic]; t != nil {
		delete(t, partition)
		if len(t) == 0 {
			delete(g, topic)
		}
	}
	if len(g) == 0 {
		delete(s.offsets, group)
	}
}

func (s *shard) hasOffset(group, topic string, partition int32) bool {
	_, ok := s.offsets[group][topic][partition]
	return ok
}
