package replication

import (
	"container/list"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Incremental fetch sessions (KIP-227), the leader side. Kafka's
// FetchSession.scala: FetchManager.newContext picks one of four contexts for
// a request from its session id and epoch:
//
//	epoch -1 (FINAL)    sessionless: the request's partitions, session id 0 in
//	                    the answer; an existing session with that id is closed
//	epoch 0 (INITIAL)   full: the request's partitions; after the read a new
//	                    session caching them is created (if the cache has room)
//	                    and its id goes back with epoch 1 implied
//	epoch > 0           incremental: the session's partitions, updated with the
//	                    request's partitions and minus the forgotten ones; the
//	                    answer carries only partitions with something to say
//	                    (records, a changed high watermark or log start offset,
//	                    an error, a diverging epoch)
//	unknown id / epoch  FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH
//	                    (FETCH_SESSION_TOPIC_ID_ERROR when a session made with
//	                    topic ids is used by a pre-v13 request or the reverse)
//
// Partitions that returned records move to the end of the session's order so
// that, under a response byte limit, the others get their turn next time.

const (
	sessionInvalidID    = 0
	sessionInitialEpoch = 0
	sessionFinalEpoch   = -1
)

// nextSessionEpoch is FetchMetadata.nextEpoch: epochs wrap to 1, never 0.
func nextSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return sessionFinalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// fetchPart is one partition of a fetch as the reader sees it: from the
// request (sessionless, full) or from the session's cache (incremental).
type fetchPart struct {
	topic              string // "" when a v13+ topic id is unknown
	topicID            [16]byte
	partition          int32
	fetchOffset        int64
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	logStartOffset     int64 // the fetcher's, for followers
	maxBytes           int32
}

// sessionKey identifies a partition in a session: by topic id when the
// session uses ids, by name otherwise (CachedPartition.equals).
type sessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

func keyOf(usesIDs bool, topic string, id [16]byte, partition int32) sessionKey {
	if usesIDs {
		return sessionKey{id: id, partition: partition}
	}
	return sessionKey{topic: topic, partition: partition}
}

// cachedPartition is a session's memory of one partition: the last request
// parameters and the last high watermark and log start offset it was sent.
type cachedPartition struct {
	req      fetchPart
	hw       int64
	logStart int64
}

type fetchSession struct {
	id           int32
	epoch        int32 // the epoch the next request must carry
	privileged   bool  // created by a follower
	usesTopicIDs bool
	created      time.Time
	lastUsed     time.Time

	order *list.List // of *cachedPartition, the session's partition order
	byKey map[sessionKey]*list.Element
}

func (s *fetchSession) key(c *cachedPartition) sessionKey {
	return keyOf(s.usesTopicIDs, c.req.topic, c.req.topicID, c.req.partition)
}

// update applies a request's partitions and forgotten partitions.
func (s *fetchSession) update(parts []fetchPart, forgotten []sessionKey) {
	for _, p := range parts {
		// Request strings alias the request frame: keep a copy.
		p.topic = strings.Clone(p.topic)
		k := keyOf(s.usesTopicIDs, p.topic, p.topicID, p.partition)
		if e, ok := s.byKey[k]; ok {
			c := e.Value.(*cachedPartition)
			name := c.req.topic
			c.req = p
			if c.req.topic == "" {
				c.req.topic = name
			}
			continue
		}
		s.byKey[k] = s.order.PushBack(&cachedPartition{req: p, hw: -1, logStart: -1})
	}
	for _, k := range forgotten {
		if e, ok := s.byKey[k]; ok {
			s.order.Remove(e)
			delete(s.byKey, k)
		}
	}
}

// parts lists the session's partitions in order, resolving topic names that
// were unknown when the partition was added.
func (s *fetchSession) parts(names func([16]byte) (string, bool)) []fetchPart {
	out := make([]fetchPart, 0, s.order.Len())
	for e := s.order.Front(); e != nil; e = e.Next() {
		c := e.Value.(*cachedPartition)
		if c.req.topic == "" && s.usesTopicIDs && names != nil {
			if n, ok := names(c.req.topicID); ok {
				c.req.topic = n
			}
		}
		out = append(out, c.req)
	}
	return out
}

// mustRespond is CachedPartition.maybeUpdateResponseData: whether an
// incremental answer includes the partition, updating the cache when update.
func (c *cachedPartition) mustRespond(r *partResult, update bool) bool {
	must := r.recordsLen() > 0
	if c.hw != r.hw {
		must = true
		if update {
			c.hw = r.hw
		}
	}
	if c.logStart != r.logStart {
		must = true
		if update {
			c.logStart = r.logStart
		}
	}
	if r.errCode != 0 {
		if update {
			c.hw = -1
		}
		must = true
	}
	if r.diverging != nil || r.preferred >= 0 {
		must = true // a preferred read replica too (isPreferredReplica)
	}
	return must
}

// sessionCache is Kafka's FetchSessionCacheShard: at most maxEntries
// sessions; when full, a session unused for evictAfter is evicted, else the
// smallest evictable one if the new session is at least as big (followers'
// sessions are protected from consumers' for evictAfter after creation).
//
// mu is a leaf lock: nothing else is locked while it is held.
type sessionCache struct {
	maxEntries int
	evictAfter time.Duration

	mu       lockrank.Mutex // a leaf
	sessions map[int32]*fetchSession
}

func newSessionCache(maxEntries int, evictAfter time.Duration) *sessionCache {
	c := &sessionCache{maxEntries: maxEntries, evictAfter: evictAfter, sessions: map[int32]*fetchSession{}}
	c.mu.SetRank(lockrank.FetchSessions)
	return c
}

func (c *sessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// ctxKind is the kind of fetch context newContext chose.
type ctxKind uint8

const (
	ctxError ctxKind = iota
	ctxSessionless
	ctxFull
	ctxIncremental
)

// fetchContext is FetchContext: what to read and how to answer.
type fetchContext struct {
	kind         ctxKind
	err          int16 // ctxError
	session      *fetchSession
	reqEpoch     int32
	isFollower   bool
	usesTopicIDs bool
	parts        []fetchPart
}

// newContext is FetchManager.newContext.
func (c *sessionCache) newContext(version int16, sessionID, epoch int32, isFollower bool,
	parts []fetchPart, forgotten []sessionKey, names func([16]byte) (string, bool), now time.Time,
) *fetchContext {
	usesIDs := version >= 13
	if epoch == sessionInitialEpoch || epoch == sessionFinalEpoch {
		if sessionID != sessionInvalidID {
			c.mu.Lock()
			delete(c.sessions, sessionID)
			c.mu.Unlock()
		}
		kind := ctxFull
		if epoch == sessionFinalEpoch {
			kind = ctxSessionless
		}
		return &fetchContext{kind: kind, isFollower: isFollower, usesTopicIDs: usesIDs, parts: parts}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionID]
	switch {
	case !ok:
		return &fetchContext{kind: ctxError, err: kerr.FetchSessionIDNotFound.Code}
	case s.epoch != epoch:
		return &fetchContext{kind: ctxError, err: kerr.InvalidFetchSessionEpoch.Code}
	case s.usesTopicIDs != usesIDs:
		return &fetchContext{kind: ctxError, err: kerr.FetchSessionTopicIDError.Code}
	}
	s.update(parts, forgotten)
	if s.order.Len() == 0 {
		delete(c.sessions, s.id)
		return &fetchContext{kind: ctxSessionless, isFollower: isFollower, usesTopicIDs: usesIDs, parts: parts}
	}
	s.lastUsed = now
	s.epoch = nextSessionEpoch(s.epoch)
	return &fetchContext{
		kind: ctxIncremental, session: s, reqEpoch: epoch, isFollower: isFollower,
		usesTopicIDs: usesIDs, parts: s.parts(names),
	}
}

// finish turns the read results into what the answer carries: the session
// id, a top-level error, and the results to include (in order).
func (c *sessionCache) finish(fc *fetchContext, results []*partResult, now time.Time) (sessionID int32, errCode int16, out []*partResult) {
	switch fc.kind {
	case ctxError:
		return sessionInvalidID, fc.err, nil
	case ctxSessionless:
		return sessionInvalidID, 0, results
	case ctxFull:
		return c.maybeCreate(fc, results, now), 0, results
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	if s.epoch != nextSessionEpoch(fc.reqEpoch) {
		// Another request moved the session on meanwhile (a duplicate).
		return s.id, kerr.InvalidFetchSessionEpoch.Code, nil
	}
	out = results[:0:0]
	var moved []*list.Element
	for _, r := range results {
		e, ok := s.byKey[keyOf(s.usesTopicIDs, r.part.topic, r.part.topicID, r.part.partition)]
		if !ok {
			continue // forgotten by a concurrent request
		}
		cp := e.Value.(*cachedPartition)
		if !cp.mustRespond(r, true) {
			continue
		}
		out = append(out, r)
		if r.recordsLen() > 0 {
			moved = append(moved, e)
		}
	}
	for _, e := range moved {
		s.order.MoveToBack(e)
	}
	return s.id, 0, out
}

func (c *sessionCache) maybeCreate(fc *fetchContext, results []*partResult, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxEntries <= 0 {
		return sessionInvalidID
	}
	if len(c.sessions) >= c.maxEntries && !c.tryEvict(fc.isFollower, len(results), now) {
		return sessionInvalidID
	}
	s := &fetchSession{
		id: c.newID(), epoch: nextSessionEpoch(sessionInitialEpoch), privileged: fc.isFollower,
		usesTopicIDs: fc.usesTopicIDs, created: now, lastUsed: now,
		order: list.New(), byKey: make(map[sessionKey]*list.Element, len(results)),
	}
	for _, r := range results {
		k := keyOf(s.usesTopicIDs, r.part.topic, r.part.topicID, r.part.partition)
		if _, dup := s.byKey[k]; dup {
			continue
		}
		cp := &cachedPartition{req: r.part, hw: r.hw, logStart: r.logStart}
		cp.req.topic = strings.Clone(cp.req.topic) // not the request frame's
		k = keyOf(s.usesTopicIDs, cp.req.topic, cp.req.topicID, cp.req.partition)
		s.byKey[k] = s.order.PushBack(cp)
	}
	c.sessions[s.id] = s
	return s.id
}

// newID picks an unused positive session id. c.mu must be held.
func (c *sessionCache) newID() int32 {
	for {
		id := rand.Int32N(math.MaxInt32) + 1 // [1, MaxInt32]
		if _, used := c.sessions[id]; !used {
			return id
		}
	}
}

// tryEvict makes room for a session of size partitions. c.mu must be held.
func (c *sessionCache) tryEvict(privileged bool, size int, now time.Time) bool {
	var lru *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed) > c.evictAfter {
		delete(c.sessions, lru.id)
		return true
	}
	// The smallest evictable session by (privileged, size, id).
	var victim *fetchSession
	less := func(a, b *fetchSession) bool {
		if a.privileged != b.privileged {
			return !a.privileged
		}
		if a.order.Len() != b.order.Len() {
			return a.order.Len() < b.order.Len()
		}
		return a.id < b.id
	}
	for _, s := range c.sessions {
		old := now.Sub(s.created) > c.evictAfter
		evictable := old || privileged && !s.privileged
		if !evictable {
			continue
		}
		if victim == nil || less(s, victim) {
			victim = s
		}
	}
	if victim == nil {
		return false
	}
	// The new session's key (privileged, size, 0) must not sort before the victim's.
	if privileged != victim.privileged {
		if !privileged {
			return false
		}
	} else if size <= victim.order.Len() {
		return false // equal sizes: the new key's id 0 sorts first
	}
	delete(c.sessions, victim.id)
	return true
}
