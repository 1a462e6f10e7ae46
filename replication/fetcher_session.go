package replication

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// followerSession is the follower side of an incremental fetch session
// (KIP-227, Kafka's FetchSessionHandler). The first request is full (session
// id 0, epoch 0) and lists every partition; the leader answers with a
// session id. Later requests carry (id, epoch), list only the partitions
// whose fetch state changed since the last request, and name the partitions
// dropped from the session in ForgottenTopics. Any session error, and every
// new connection, starts over with a full request.
type followerSession struct {
	id    int32
	epoch int32 // the epoch of the next request; 0 = full
	sent  map[storage.TopicPartition]sessionPart
	next  map[storage.TopicPartition]sessionPart // in the request in flight
	names map[[16]byte]string
}

// sessionPart is a partition's fetch state as last sent.
type sessionPart struct {
	topicID          [16]byte
	fetchOffset      int64
	logStartOffset   int64
	maxBytes         int32
	leaderEpoch      int32
	lastFetchedEpoch int32
}

// build fills req's session fields, partitions and forgotten topics for the
// partitions to fetch now (next).
func (s *followerSession) build(req *kmsg.FetchRequest, next map[storage.TopicPartition]sessionPart) {
	if s.names == nil {
		s.names = map[[16]byte]string{}
	}
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	full := s.epoch == sessionInitialEpoch
	var send, forget []storage.TopicPartition
	for tp, np := range next {
		s.names[np.topicID] = tp.Topic
		if old, ok := s.sent[tp]; full || !ok || old != np {
			send = append(send, tp)
		}
	}
	if !full {
		for tp, old := range s.sent {
			if np, ok := next[tp]; !ok || np.topicID != old.topicID {
				forget = append(forget, tp)
			}
		}
	}
	sortTPs(send)
	sortTPs(forget)
	for _, tp := range send {
		np := next[tp]
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic || req.Topics[n-1].TopicID != np.topicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = tp.Topic, np.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.FetchOffset = np.fetchOffset
		rp.LogStartOffset = np.logStartOffset
		rp.PartitionMaxBytes = np.maxBytes
		rp.CurrentLeaderEpoch = np.leaderEpoch
		rp.LastFetchedEpoch = np.lastFetchedEpoch
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	for _, tp := range forget {
		old := s.sent[tp]
		if n := len(req.ForgottenTopics); n == 0 || req.ForgottenTopics[n-1].Topic != tp.Topic ||
			req.ForgottenTopics[n-1].TopicID != old.topicID {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = tp.Topic, old.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		ft := &req.ForgottenTopics[len(req.ForgottenTopics)-1]
		ft.Partitions = append(ft.Partitions, tp.Partition)
	}
	s.next = next
}

// handleResponse moves the session on after an answer and reports whether
// the answer's partitions may be processed (FetchSessionHandler.handleResponse).
func (s *followerSession) handleResponse(resp *kmsg.FetchResponse) bool {
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code || resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code ||
			resp.ErrorCode == kerr.FetchSessionTopicIDError.Code {
			s.reset()
		}
		return false
	}
	if s.epoch == sessionInitialEpoch {
		if resp.SessionID != sessionInvalidID {
			s.id, s.epoch = resp.SessionID, 1
		}
	} else {
		s.epoch = nextSessionEpoch(s.epoch)
	}
	s.sent, s.next = s.next, nil
	return true
}

// reset makes the next request a full one in a new session.
func (s *followerSession) reset() {
	s.id, s.epoch, s.sent, s.next = sessionInvalidID, sessionInitialEpoch, nil, nil
}

// topicName resolves a v13+ response's topic id.
func (s *followerSession) topicName(id [16]byte, fallback string) string {
	if n, ok := s.names[id]; ok {
		return n
	}
	return fallback
}

func sortTPs(tps []storage.TopicPartition) {
	slices.SortFunc(tps, func(a, b storage.TopicPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}
