package replication

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fetchedPart struct {
	topic     string
	partition int32
	records   int
	hw        int64
	err       int16
}

func summarize(t *testing.T, r *kmsg.FetchResponse) []fetchedPart {
	var out []fetchedPart
	for _, tp := range r.Topics {
		for _, p := range tp.Partitions {
			out = append(out, fetchedPart{tp.Topic, p.Partition, len(values(t, p.RecordBatches)), p.HighWatermark, p.ErrorCode})
		}
	}
	return out
}

func TestFetchSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 3, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(2, "a"))

		// Full request (epoch 0): every partition, a new session.
		req := fetchReq(12, 0, 0, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 0, epoch: -1},
			fetchPartSpec{topic: "t", partition: 1, offset: 0, epoch: -1}, fetchPartSpec{topic: "t", partition: 2, offset: 0, epoch: -1})
		req.SessionID, req.SessionEpoch = 0, 0
		resp := h.fetch(req)
		id := resp.SessionID
		if id == 0 || resp.ErrorCode != 0 || len(summarize(t, resp)) != 3 {
			t.Fatalf("full: id %d error %d parts %+v", id, resp.ErrorCode, summarize(t, resp))
		}

		incr := func(epoch int32, parts ...fetchPartSpec) *kmsg.FetchResponse {
			r := fetchReq(12, 0, 0, 1<<20, parts...)
			r.SessionID, r.SessionEpoch = id, epoch
			return h.fetch(r)
		}
		// Incremental with the next fetch offset for partition 0: nothing new.
		resp = incr(1, fetchPartSpec{topic: "t", partition: 0, offset: 2, epoch: -1})
		if resp.SessionID != id || len(resp.Topics) != 0 {
			t.Fatalf("quiet incremental: %+v", summarize(t, resp))
		}
		// New data on partition 1 (its cached fetch offset is still 0).
		h.produce("t", 1, batch(1, "b"))
		resp = incr(2)
		if got := summarize(t, resp); len(got) != 1 || got[0].partition != 1 || got[0].records != 1 || got[0].hw != 1 {
			t.Fatalf("incremental after produce: %+v", got)
		}
		// Same epoch again: INVALID_FETCH_SESSION_EPOCH.
		if resp = incr(2); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 {
			t.Fatalf("stale epoch: error %d id %d", resp.ErrorCode, resp.SessionID)
		}
		// Partition 1's offset is unchanged in the session, so it is read
		// again; its high watermark did not change, but records came back.
		resp = incr(3)
		if got := summarize(t, resp); len(got) != 1 || got[0].partition != 1 {
			t.Fatalf("re-read: %+v", got)
		}
		// Forget partition 1 and move on; a produce to it is not reported.
		r := fetchReq(12, 0, 0, 1<<20)
		r.SessionID, r.SessionEpoch = id, 4
		fg := kmsg.NewFetchRequestForgottenTopic()
		fg.Topic, fg.Partitions = "t", []int32{1}
		r.ForgottenTopics = append(r.ForgottenTopics, fg)
		h.fetch(r)
		h.produce("t", 1, batch(1, "c"))
		h.produce("t", 2, batch(1, "d"))
		if got := summarize(t, incr(5)); len(got) != 1 || got[0].partition != 2 {
			t.Fatalf("after forgetting: %+v", got)
		}
		// Unknown session id.
		r = fetchReq(12, 0, 0, 1<<20)
		r.SessionID, r.SessionEpoch = id+1, 1
		if resp = h.fetch(r); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("unknown id: %d", resp.ErrorCode)
		}
		// A v13 request on a name-based session.
		r = fetchReq(13, 0, 0, 1<<20)
		r.SessionID, r.SessionEpoch = id, 6
		if resp = h.fetch(r); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
			t.Fatalf("topic id mismatch: %d", resp.ErrorCode)
		}
		// Final epoch: sessionless, the session is closed.
		r = fetchReq(12, 0, 0, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 0, epoch: -1})
		r.SessionID, r.SessionEpoch = id, -1
		if resp = h.fetch(r); resp.SessionID != 0 || len(summarize(t, resp)) != 1 {
			t.Fatalf("final: %+v", resp)
		}
		if resp = incr(6); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("closed session still there: %d", resp.ErrorCode)
		}
	})
}

// An incremental fetch with nothing new long-polls and wakes on an append to
// a session partition that the request itself did not name.
func TestFetchSessionLongPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		req := fetchReq(13, 0, 0, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 0, epoch: -1},
			fetchPartSpec{topic: "t", partition: 1, offset: 0, epoch: -1})
		req.SessionEpoch = 0
		id := h.fetch(req).SessionID
		got := make(chan *kmsg.FetchResponse)
		go func() {
			r := fetchReq(13, 5000, 1, 1<<20)
			r.SessionID, r.SessionEpoch = id, 1
			got <- h.fetch(r)
		}()
		synctest.Wait()
		h.produce("t", 1, batch(2, "x"))
		resp := <-got
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != topicID("t") || len(resp.Topics[0].Partitions) != 1 ||
			resp.Topics[0].Partitions[0].Partition != 1 {
			t.Fatalf("answer %+v", resp)
		}
	})
}

func TestSessionCacheEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newSessionCache(2, 2*time.Minute)
	full := func(n int, follower bool) int32 {
		fc := c.newContext(12, 0, 0, follower, nil, nil, nil, now)
		var rs []*partResult
		for i := 0; i < n; i++ {
			rs = append(rs, &partResult{part: fetchPart{topic: "t", partition: int32(i)}})
		}
		id, _, _ := c.finish(fc, rs, now)
		return id
	}
	a := full(5, false)
	b := full(3, false)
	if a == 0 || b == 0 || c.len() != 2 {
		t.Fatalf("sessions %d %d, cache %d", a, b, c.len())
	}
	// Full: a consumer session cannot evict young consumer sessions.
	if id := full(10, false); id != 0 {
		t.Fatal("evicted a young session")
	}
	// A follower may evict a consumer session, the smallest first.
	if id := full(1, true); id == 0 {
		t.Fatal("a follower could not evict")
	}
	if _, ok := c.sessions[b]; ok {
		t.Fatal("the smaller session should have gone")
	}
	// After the eviction time any unused session goes.
	now = now.Add(3 * time.Minute)
	if id := full(1, false); id == 0 {
		t.Fatal("stale session not evicted")
	}
}

// A v13 session partition whose topic id was unknown when the session was
// created is resolved by a later incremental fetch, from the image the
// request read before taking the session cache's lock (a leaf: resolving
// through ReplicaManager.mu under it would break the lock order, which
// lockrank turns into a panic).
func TestFetchSessionResolvesTopicIDLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		req := fetchReq(13, 0, 0, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 0, epoch: -1},
			fetchPartSpec{topic: "later", partition: 0, offset: 0, epoch: -1})
		req.SessionEpoch = 0
		resp := h.fetch(req)
		id := resp.SessionID
		if id == 0 {
			t.Fatalf("no session: %+v", resp)
		}
		var unknown bool
		for _, tp := range resp.Topics {
			if tp.TopicID == topicID("later") && len(tp.Partitions) == 1 && tp.Partitions[0].ErrorCode == kerr.UnknownTopicID.Code {
				unknown = true
			}
		}
		if !unknown {
			t.Fatalf("the unknown topic id was not answered UNKNOWN_TOPIC_ID: %+v", resp.Topics)
		}
		h.createTopic("later", 1, []int32{1}, 1, nil, nil)
		h.produce("later", 0, batch(2, "x"))
		r := fetchReq(13, 0, 0, 1<<20)
		r.SessionID, r.SessionEpoch = id, 1
		resp = h.fetch(r)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != topicID("later") ||
			len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 ||
			len(values(t, resp.Topics[0].Partitions[0].RecordBatches)) != 2 {
			t.Fatalf("incremental after the topic appeared: %+v", resp)
		}
	})
}
