package share

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Share sessions (KIP-932; Kafka's ShareSessionCache, ShareSession,
// ShareRequestMetadata): a member's ShareFetch requests to one broker form
// a session, keyed by (group, member). The session remembers the
// partitions being fetched, so a request lists only those added
// (Topics) and those forgotten (ForgottenTopicsData).
//
//	epoch 0   open a new session (an existing one of the key is replaced);
//	          SHARE_SESSION_LIMIT_REACHED when group.share.max.share.sessions
//	          sessions are open; acknowledgements are INVALID_REQUEST
//	epoch n   the next request of the session, n its current epoch:
//	          SHARE_SESSION_NOT_FOUND without one, INVALID_SHARE_SESSION_EPOCH
//	          for another epoch; the epoch moves to n+1 (1 after MaxInt32)
//	epoch -1  close: acknowledgements only (fetching is INVALID_REQUEST);
//	          the member's acquired records of the session are released
//
// ShareAcknowledge uses the same epochs and never opens a session (epoch 0
// is INVALID_SHARE_SESSION_EPOCH).
//
// A session belongs to the connection that opened it (Kafka 4.1+'s
// connection id in ShareSessionCache): when that connection closes, the
// session is removed, the member's records in it are released, and a group
// left without sessions drops its share partitions (ShareGroupListener's
// onMemberLeave and onGroupEmpty).

// Final and Initial are the special share session epochs.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// TopicPartition names a partition by topic id, as share requests do.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

type sessionKey struct{ group, member string }

type session struct {
	epoch    int32
	parts    []TopicPartition // in the order they were added
	index    map[TopicPartition]struct{}
	lastUsed int64
	// conn is the connection the session was opened on (0: none known);
	// unwatch stops watching it (Manager.BindSession)
	conn    uint64
	unwatch func() bool
}

// drop forgets the session's connection watch.
func (s *session) drop() {
	if s.unwatch != nil {
		s.unwatch()
	}
}

// SessionCache is Kafka's ShareSessionCache.
type SessionCache struct {
	max int
	mu  lockrank.Mutex // guards sessions
	// sessions by (group, member)
	sessions map[sessionKey]*session
}

// NewSessionCache returns a cache of at most max sessions
// (group.share.max.share.sessions).
func NewSessionCache(max int) *SessionCache {
	c := &SessionCache{max: max, sessions: map[sessionKey]*session{}}
	c.mu.SetRank(lockrank.ShareSessions)
	return c
}

func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// Open starts the session of a request with epoch 0, replacing the
// member's previous one, and returns its partitions (parts, deduplicated).
func (c *SessionCache) Open(group, member string, parts []TopicPartition, nowMs int64) ([]TopicPartition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{group, member}
	if old, ok := c.sessions[k]; ok {
		old.drop()
		delete(c.sessions, k)
	}
	if len(c.sessions) >= c.max {
		return nil, kerr.ShareSessionLimitReached
	}
	s := &session{epoch: 1, index: map[TopicPartition]struct{}{}, lastUsed: nowMs}
	s.add(parts)
	c.sessions[k] = s
	return append([]TopicPartition(nil), s.parts...), nil
}

func (s *session) add(parts []TopicPartition) {
	for _, tp := range parts {
		if _, ok := s.index[tp]; !ok {
			s.index[tp] = struct{}{}
			s.parts = append(s.parts, tp)
		}
	}
}

// Update applies a request of epoch epoch > 0 to its session: adds and
// forgets partitions, moves the epoch on, and returns the partitions.
func (c *SessionCache) Update(group, member string, epoch int32, add, forget []TopicPartition, nowMs int64) ([]TopicPartition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionKey{group, member}]
	if !ok {
		return nil, kerr.ShareSessionNotFound
	}
	if s.epoch != epoch {
		return nil, kerr.InvalidShareSessionEpoch
	}
	// added first, then forgotten: a partition listed only for its
	// acknowledgements and forgotten in the same request leaves the
	// session (ShareSession.update)
	s.add(add)
	if len(forget) > 0 {
		gone := make(map[TopicPartition]struct{}, len(forget))
		for _, tp := range forget {
			gone[tp] = struct{}{}
			delete(s.index, tp)
		}
		kept := s.parts[:0]
		for _, tp := range s.parts {
			if _, ok := gone[tp]; !ok {
				kept = append(kept, tp)
			}
		}
		s.parts = kept
	}
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = nowMs
	return append([]TopicPartition(nil), s.parts...), nil
}

// Acknowledge checks a ShareAcknowledge's epoch against its session
// (SharePartitionManager.acknowledgeSessionUpdate) and moves it on; the
// final epoch is accepted without touching the session.
func (c *SessionCache) Acknowledge(group, member string, epoch int32, nowMs int64) error {
	if epoch == InitialEpoch {
		return kerr.InvalidShareSessionEpoch
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionKey{group, member}]
	if !ok {
		return kerr.ShareSessionNotFound
	}
	if epoch == FinalEpoch {
		return nil
	}
	if s.epoch != epoch {
		return kerr.InvalidShareSessionEpoch
	}
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = nowMs
	return nil
}

// Exists says whether the member has a session (a final-epoch request
// needs one: SHARE_SESSION_NOT_FOUND).
func (c *SessionCache) Exists(group, member string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.sessions[sessionKey{group, member}]
	return ok
}

// Close removes the member's session and returns its partitions.
func (c *SessionCache) Close(group, member string) []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{group, member}
	s, ok := c.sessions[k]
	if !ok {
		return nil
	}
	s.drop()
	delete(c.sessions, k)
	return s.parts
}

// bind records the connection a session was opened on; false if the
// session is gone.
func (c *SessionCache) bind(group, member string, conn uint64, unwatch func() bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionKey{group, member}]
	if !ok || s.conn != 0 {
		return false
	}
	s.conn, s.unwatch = conn, unwatch
	return true
}

// closeOn removes the member's session if it is still the one opened on
// conn, and returns its partitions.
func (c *SessionCache) closeOn(group, member string, conn uint64) ([]TopicPartition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{group, member}
	s, ok := c.sessions[k]
	if !ok || s.conn != conn {
		return nil, false
	}
	delete(c.sessions, k)
	return s.parts, true
}

// groupSessions is the number of open sessions of a group.
func (c *SessionCache) groupSessions(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.sessions {
		if k.group == group {
			n++
		}
	}
	return n
}

// Epoch returns the epoch the member's next request must carry, -1 with
// no session (for transcripts).
func (c *SessionCache) Epoch(group, member string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[sessionKey{group, member}]; ok {
		return s.epoch
	}
	return -1
}

// Len is the number of open sessions.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
