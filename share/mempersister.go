package share

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// MemPersister is a sharestate.Persister that keeps the share state in
// memory, with the share coordinator's merge rules (ShareCoordinatorShard:
// a write sets the start offset, drops the batches below it and overlays
// its batches on the ones kept; a write with an older state epoch is
// FENCED_STATE_EPOCH, one with an older leader epoch FENCED_LEADER_EPOCH).
// It is the transcripts' persister, and the broker's until a share
// coordinator is wired (state then lasts as long as the process).
type MemPersister struct {
	mu lockrank.Mutex // guards states
	// states by sharestate.Key
	states map[string]*memState
	// Fail, when set, answers every write with this code (tests).
	Fail int16
}

type memState struct {
	stateEpoch, leaderEpoch int32
	start                   int64
	batches                 []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch
}

// NewMemPersister returns an empty MemPersister.
func NewMemPersister() *MemPersister {
	m := &MemPersister{states: map[string]*memState{}}
	m.mu.SetRank(lockrank.ShareMemPersister)
	return m
}

var _ sharestate.Persister = (*MemPersister)(nil)

func (m *MemPersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			m.states[sharestate.Key(req.GroupID, t.TopicID, p.Partition)] = &memState{stateEpoch: p.StateEpoch, start: p.StartOffset, leaderEpoch: -1}
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (m *MemPersister) ReadState(_ context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			st, ok := m.states[sharestate.Key(req.GroupID, t.TopicID, p.Partition)]
			if !ok {
				// never initialized: the coordinator answers an
				// uninitialized state (start offset -1)
				st = &memState{start: -1, leaderEpoch: -1}
				m.states[sharestate.Key(req.GroupID, t.TopicID, p.Partition)] = st
			}
			if p.LeaderEpoch < st.leaderEpoch {
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			} else {
				st.leaderEpoch = p.LeaderEpoch
				rp.StateEpoch, rp.StartOffset = st.stateEpoch, st.start
				rp.StateBatches = slices.Clone(st.batches)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (m *MemPersister) WriteState(_ context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			key := sharestate.Key(req.GroupID, t.TopicID, p.Partition)
			st, ok := m.states[key]
			switch {
			case m.Fail != 0:
				rp.ErrorCode = m.Fail
			case !ok:
				st = &memState{}
				m.states[key] = st
				fallthrough
			default:
				if p.StateEpoch < st.stateEpoch {
					rp.ErrorCode = kerr.FencedStateEpoch.Code
					break
				}
				if p.LeaderEpoch < st.leaderEpoch {
					rp.ErrorCode = kerr.FencedLeaderEpoch.Code
					break
				}
				if p.StateEpoch == st.stateEpoch && p.StartOffset < st.start {
					// a write that raced a later one: the start
					// offset never moves back within a state epoch
					p.StartOffset = st.start
				}
				st.stateEpoch, st.leaderEpoch = p.StateEpoch, p.LeaderEpoch
				st.merge(p.StartOffset, p.StateBatches)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// merge is the coordinator's combination of a stored state and a write.
func (st *memState) merge(start int64, in []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) {
	if start >= 0 {
		st.start = start
	}
	var out []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch
	add := func(b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) {
		b.FirstOffset = max(b.FirstOffset, st.start)
		if b.LastOffset >= b.FirstOffset {
			out = append(out, b)
		}
	}
	for _, old := range st.batches {
		// the parts of old that no new batch covers
		pieces := [][2]int64{{old.FirstOffset, old.LastOffset}}
		for _, n := range in {
			var next [][2]int64
			for _, r := range pieces {
				if n.LastOffset < r[0] || n.FirstOffset > r[1] {
					next = append(next, r)
					continue
				}
				if r[0] < n.FirstOffset {
					next = append(next, [2]int64{r[0], n.FirstOffset - 1})
				}
				if r[1] > n.LastOffset {
					next = append(next, [2]int64{n.LastOffset + 1, r[1]})
				}
			}
			pieces = next
		}
		for _, r := range pieces {
			b := old
			b.FirstOffset, b.LastOffset = r[0], r[1]
			add(b)
		}
	}
	for _, n := range in {
		b := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
		b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = n.FirstOffset, n.LastOffset, n.DeliveryState, n.DeliveryCount
		add(b)
	}
	slices.SortFunc(out, func(a, b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	st.batches = out
}

func (m *MemPersister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			delete(m.states, sharestate.Key(req.GroupID, t.TopicID, p.Partition))
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (m *MemPersister) ReadStateSummary(_ context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			if st, ok := m.states[sharestate.Key(req.GroupID, t.TopicID, p.Partition)]; ok {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = st.stateEpoch, st.leaderEpoch, st.start
			} else {
				rp.StartOffset = -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// Dump renders a stored state for transcripts.
func (m *MemPersister) Dump(group string, topicID [16]byte, partition int32) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[sharestate.Key(group, topicID, partition)]
	if !ok {
		return "none"
	}
	s := "state-epoch=" + itoa(int64(st.stateEpoch)) + " leader-epoch=" + itoa(int64(st.leaderEpoch)) + " start=" + itoa(st.start)
	for _, b := range st.batches {
		s += " " + itoa(b.FirstOffset) + "-" + itoa(b.LastOffset) + ":" + stateName(sharestate.RecordState(b.DeliveryState)) + "/" + itoa(int64(b.DeliveryCount))
	}
	return s
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
