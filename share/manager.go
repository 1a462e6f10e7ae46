package share

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/sharestate"
	"github.com/kgo-broker/kgo-broker/storage"
)

// LogReader is what share partitions need of the partition leaders' logs;
// the broker implements it over the replica manager. Errors are Kafka's
// (kerr): NOT_LEADER_OR_FOLLOWER when the partition is not led here,
// UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR.
type LogReader interface {
	// ReadShare reads whole record batches from offset (from the log start
	// offset when offset is below it), at most maxBytes unless minOne
	// lets the first batch pass it, bounded by the high watermark, or by
	// the last stable offset with readCommitted, which also returns the
	// aborted transactions overlapping the read.
	ReadShare(topic string, partition int32, offset int64, maxBytes int32, minOne, readCommitted bool) (LogRead, error)
	// Offsets are the partition's log start offset, high watermark and
	// leader epoch (a share partition is loaded at that epoch).
	Offsets(topic string, partition int32) (logStart, highWatermark int64, leaderEpoch int32, err error)
	// Watch calls wake (which must not block) on every append and high
	// watermark move of the partition until cancel.
	Watch(topic string, partition int32, wake func()) (cancel func(), err error)
	// OffsetForTimestamp is the first offset below the high watermark
	// whose timestamp is at or after ts; found is false when none is.
	OffsetForTimestamp(topic string, partition int32, ts int64) (offset int64, found bool, err error)
}

// LogRead is one ReadShare.
type LogRead struct {
	Records  []byte // whole record batches
	LogStart int64
	Aborted  []storage.AbortedTxn
}

// DLQWriter writes records of a share partition to its group's
// dead-letter queue (KIP-1191; Kafka's ShareGroupDLQManager): the broker
// validates the group's DLQ topic, creates it if allowed, and produces one
// DLQ record per offset. It is called with no lock held and may wait on
// other nodes; an error only means the records were not written (they are
// archived regardless).
type DLQWriter interface {
	WriteDLQ(ctx context.Context, r DLQRecords) error
}

// DLQRecords is one DLQ write (ShareGroupDLQRecordParameter).
type DLQRecords struct {
	Group     string
	Topic     string
	TopicID   [16]byte
	Partition int32
	DLQBatch
}

// Defaults are the broker's group.share.* settings; a group's configs
// (GROUP resources) override the share.* keys of each.
type Defaults struct {
	Limits
	AutoOffsetReset string // share.auto.offset.reset default: latest
	MaxSessions     int    // group.share.max.share.sessions
}

// Config wires a Manager.
type Config struct {
	// Persister reaches the share coordinator; nil keeps the state in
	// memory (a MemPersister).
	Persister sharestate.Persister
	Log       LogReader
	// GroupConfig returns a group's dynamic configs (share.record.lock.
	// duration.ms, share.auto.offset.reset, share.isolation.level,
	// share.delivery.count.limit, share.partition.max.record.locks); nil
	// or a missing key means the broker default.
	GroupConfig func(group string) map[string]string
	Defaults    Defaults
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// OnError, when set, is told of background write failures.
	OnError func(p *Partition, err error)
	// DLQ writes dead-letter queue records; DLQFeature says whether
	// share.version 2 is finalized (ShareVersion.supportsShareGroupDLQ).
	// Without both, no group has a DLQ.
	DLQ        DLQWriter
	DLQFeature func() bool
	// DLQTimeout bounds one DLQ write (2 minutes when 0: Kafka's 5
	// attempts backing off 1 s doubling to 30 s).
	DLQTimeout time.Duration
	// DLQSpawn runs a DLQ write (go f() when nil; transcripts queue
	// them and run them on command).
	DLQSpawn func(f func())
	// OnDLQError, when set, is told of DLQ writes that failed ("Failed to
	// write to DLQ, proceeding to ARCHIVED regardless.").
	OnDLQError func(p *Partition, b DLQBatch, err error)
}

var errNoDLQ = errors.New("no DLQ writer")

type partKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

type entry struct {
	p     *Partition
	ready chan struct{} // closed once loading ended
	err   error         // the load's error (read after ready)
}

// Manager is Kafka's SharePartitionManager: the share partitions of this
// node by (group, topic id, partition), loaded on their first fetch, the
// share sessions, fetches parked until records arrive or are released
// (DelayedShareFetch), acknowledgements, lock expiry and members leaving.
type Manager struct {
	cfg       Config
	persister sharestate.Persister
	Sessions  *SessionCache

	mu lockrank.Mutex // guards parts and released
	// parts are the share partitions, loaded or loading
	parts map[partKey]*entry
	// released is closed (and replaced) when records become Available
	// again, waking parked fetches
	released chan struct{}

	// conns numbers the connections share sessions are bound to
	conns atomic.Uint64
	// parked counts the fetches waiting for records (DelayedShareFetch)
	parked atomic.Int64
}

// Parked is the number of share fetches parked until records arrive, are
// released, or their max wait passes.
func (m *Manager) Parked() int64 { return m.parked.Load() }

// NewManager returns a Manager.
func NewManager(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Defaults.MaxSessions <= 0 {
		cfg.Defaults.MaxSessions = 2000
	}
	m := &Manager{cfg: cfg, persister: cfg.Persister, Sessions: NewSessionCache(cfg.Defaults.MaxSessions),
		parts: map[partKey]*entry{}, released: make(chan struct{})}
	if m.persister == nil {
		m.persister = NewMemPersister()
	}
	m.mu.SetRank(lockrank.ShareManager)
	return m
}

func (m *Manager) nowMs() int64 { return m.cfg.Now().UnixMilli() }

// groupLimits resolves a group's settings: its share.* configs over the
// broker defaults (GroupConfig.java; values outside Kafka's bounds were
// refused when the config was set, so a bad one here falls back).
func (m *Manager) groupLimits(group string) (Limits, string) {
	lim, reset := m.cfg.Defaults.Limits, m.cfg.Defaults.AutoOffsetReset
	if reset == "" {
		reset = "latest"
	}
	var gc map[string]string
	if m.cfg.GroupConfig != nil {
		gc = m.cfg.GroupConfig(group)
	}
	num := func(k string, min int64) (int64, bool) {
		v, err := strconv.ParseInt(gc[k], 10, 64)
		return v, err == nil && v >= min
	}
	if v, ok := num("share.record.lock.duration.ms", 1); ok {
		lim.LockMs = v
	}
	if v, ok := num("share.delivery.count.limit", 1); ok && v <= 1000 {
		lim.DeliveryLimit = int16(v)
	}
	if v, ok := num("share.partition.max.record.locks", 1); ok {
		lim.MaxLocks = v
	}
	if v := strings.ToLower(gc["share.isolation.level"]); v != "" {
		lim.ReadCommitted = v == "read_committed"
	}
	if v := strings.ToLower(gc["share.auto.offset.reset"]); v != "" {
		reset = v
	}
	lim.DLQ = m.cfg.DLQ != nil && m.cfg.DLQFeature != nil && m.cfg.DLQFeature() &&
		strings.TrimSpace(gc["errors.deadletterqueue.topic.name"]) != ""
	if lim.LockMs <= 0 {
		lim.LockMs = 30000
	}
	if lim.DeliveryLimit <= 0 {
		lim.DeliveryLimit = 5
	}
	if lim.MaxLocks <= 0 {
		lim.MaxLocks = 2000
	}
	return lim, reset
}

// LockMs is the acquisition lock duration of a group
// (AcquisitionLockTimeoutMillis in the answers).
func (m *Manager) LockMs(group string) int64 {
	lim, _ := m.groupLimits(group)
	return lim.LockMs
}

// Partition returns the share partition of a key if it is loaded and not
// fenced.
func (m *Manager) Partition(group string, tp TopicPartition) *Partition {
	m.mu.Lock()
	e, ok := m.parts[partKey{group, tp.TopicID, tp.Partition}]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-e.ready:
		if e.err == nil && !e.p.Fenced() {
			return e.p
		}
	default:
	}
	return nil
}

// load returns the share partition of (group, topic, partition), loading
// it from the persister on first use (SharePartition.maybeInitialize). A
// failed load is forgotten, so the next fetch tries again; a fenced
// partition is replaced.
func (m *Manager) load(ctx context.Context, group string, fp FetchPart) (*Partition, error) {
	k := partKey{group, fp.TopicID, fp.Partition}
	m.mu.Lock()
	e, ok := m.parts[k]
	if !ok {
		e = &entry{ready: make(chan struct{})}
		m.parts[k] = e
	}
	m.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, kerr.RequestTimedOut
		}
		if e.err == nil && !e.p.Fenced() {
			return e.p, nil
		}
		m.forget(k, e)
		if e.err != nil {
			return nil, e.err
		}
		return m.load(ctx, group, fp)
	}
	e.p, e.err = m.initialize(ctx, group, fp)
	close(e.ready)
	if e.err != nil {
		m.forget(k, e)
	}
	return e.p, e.err
}

func (m *Manager) forget(k partKey, e *entry) {
	m.mu.Lock()
	if m.parts[k] == e {
		delete(m.parts, k)
	}
	m.mu.Unlock()
}

func (m *Manager) initialize(ctx context.Context, group string, fp FetchPart) (*Partition, error) {
	lim, reset := m.groupLimits(group)
	logStart, hw, epoch, err := m.cfg.Log.Offsets(fp.Topic, fp.Partition)
	if err != nil {
		return nil, err
	}
	p := NewPartition(group, fp.Topic, fp.TopicID, fp.Partition, lim)
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = fp.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = fp.Partition, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := m.persister.ReadState(ctx, req)
	if err != nil {
		return nil, kerr.RequestTimedOut
	}
	var got *kmsg.ReadShareGroupStateResponseTopicPartition
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].TopicID == fp.TopicID && resp.Topics[i].Partitions[j].Partition == fp.Partition {
				got = &resp.Topics[i].Partitions[j]
			}
		}
	}
	if got == nil {
		return nil, kerr.UnknownServerError
	}
	if got.ErrorCode != 0 {
		return nil, persisterError(got.ErrorCode)
	}
	err = p.Load(got, epoch, func() (int64, error) {
		// share.auto.offset.reset (ShareFetchUtils.offsetForEarliest/
		// Latest/Timestamp): by_duration:<ISO-8601 duration> starts at
		// the first record at most that old, the latest offset when
		// there is none
		switch {
		case reset == "earliest":
			return logStart, nil
		case strings.HasPrefix(reset, "by_duration:"):
			d, ok := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
			if !ok {
				return hw, nil
			}
			off, found, err := m.cfg.Log.OffsetForTimestamp(fp.Topic, fp.Partition, m.cfg.Now().Add(-d).UnixMilli())
			if err != nil {
				return 0, err
			}
			if found {
				return off, nil
			}
		}
		return hw, nil
	})
	if err != nil {
		return nil, err
	}
	for _, b := range p.Resume() {
		m.spawnDLQ(p, b)
	}
	return p, nil
}

func (m *Manager) spawnDLQ(p *Partition, b DLQBatch) {
	if m.cfg.DLQSpawn != nil {
		m.cfg.DLQSpawn(func() { m.writeDLQ(p, b) })
		return
	}
	go m.writeDLQ(p, b)
}

// writeDLQ writes a DLQ batch to the group's dead-letter queue, then
// archives it and persists that, whatever the DLQ write's outcome
// (SharePartition.initiateDLQAndArchive). It runs on its own goroutine:
// the acknowledgement or lock expiry that archived the records does not
// wait for it.
func (m *Manager) writeDLQ(p *Partition, b DLQBatch) {
	d := m.cfg.DLQTimeout
	if d <= 0 {
		d = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var err error
	if m.cfg.DLQ == nil {
		err = errNoDLQ
	} else {
		err = m.cfg.DLQ.WriteDLQ(ctx, DLQRecords{Group: p.Group, Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, DLQBatch: b})
	}
	if err != nil && m.cfg.OnDLQError != nil {
		m.cfg.OnDLQError(p, b, err)
	}
	if w := p.Archive(b); w != nil {
		m.persist(ctx, p.Group, []pendingWrite{{p, w}})
	}
}

// persisterError maps a persister answer to what a share client is told
// (SharePartition.fetchPersisterError): the coordinator's own errors are
// COORDINATOR_NOT_AVAILABLE, a fenced state or leader epoch
// NOT_LEADER_OR_FOLLOWER (the share partition is dropped and loaded
// again), GROUP_ID_NOT_FOUND and UNKNOWN_TOPIC_OR_PARTITION as they are,
// anything else UNKNOWN_SERVER_ERROR.
func persisterError(code int16) error {
	switch err := kerr.ErrorForCode(code); err {
	case nil:
		return nil
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
		return kerr.CoordinatorNotAvailable
	case kerr.GroupIDNotFound, kerr.UnknownTopicOrPartition:
		return err
	case kerr.FencedLeaderEpoch, kerr.FencedStateEpoch, kerr.NotLeaderForPartition:
		return kerr.NotLeaderForPartition
	default:
		return kerr.UnknownServerError
	}
}

// pendingWrite is one partition's write of a persist call.
type pendingWrite struct {
	p *Partition
	w *Write
}

// persist sends the writes (one group) in one WriteShareGroupState, then
// completes each share partition with its answer, and returns the errors
// in order. No lock is held while the persister runs.
func (m *Manager) persist(ctx context.Context, group string, writes []pendingWrite) []error {
	errs := make([]error, len(writes))
	if len(writes) == 0 {
		return errs
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = group
	byTopic := map[[16]byte]int{}
	for _, pw := range writes {
		i, ok := byTopic[pw.p.TopicID]
		if !ok {
			i = len(req.Topics)
			byTopic[pw.p.TopicID] = i
			t := kmsg.NewWriteShareGroupStateRequestTopic()
			t.TopicID = pw.p.TopicID
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, pw.w.Data)
	}
	resp, err := m.persister.WriteState(ctx, req)
	codes := map[TopicPartition]int16{}
	if err == nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				codes[TopicPartition{t.TopicID, p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, pw := range writes {
		var werr error
		if err != nil {
			werr = kerr.RequestTimedOut
		} else if code, ok := codes[TopicPartition{pw.p.TopicID, pw.p.Partition}]; !ok {
			werr = kerr.UnknownServerError
		} else {
			werr = persisterError(code)
		}
		pw.p.Complete(pw.w, werr)
		errs[i] = werr
		if werr == nil || pw.w.Committed() {
			// persisted (or kept though its write failed): on to the DLQ
			for _, b := range pw.w.DLQ {
				m.spawnDLQ(pw.p, b)
			}
		}
		if werr != nil && m.cfg.OnError != nil {
			m.cfg.OnError(pw.p, werr)
		}
	}
	m.notifyReleased()
	return errs
}

// notifyReleased wakes the fetches parked for records to be released.
func (m *Manager) notifyReleased() {
	m.mu.Lock()
	close(m.released)
	m.released = make(chan struct{})
	m.mu.Unlock()
}

func (m *Manager) releasedChan() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.released
}

// loadedPartitions returns the loaded share partitions, of one group when
// group != "".
func (m *Manager) loadedPartitions(group string) []*Partition {
	m.mu.Lock()
	var es []*entry
	for k, e := range m.parts {
		if group == "" || k.group == group {
			es = append(es, e)
		}
	}
	m.mu.Unlock()
	var out []*Partition
	for _, e := range es {
		select {
		case <-e.ready:
			if e.err == nil {
				out = append(out, e.p)
			}
		default:
		}
	}
	return out
}

// ExpireLocks releases every acquisition lock expired by now and persists
// the releases (the acquisition lock timer tasks of Kafka's SharePartition).
func (m *Manager) ExpireLocks(ctx context.Context) {
	now := m.nowMs()
	byGroup := map[string][]pendingWrite{}
	for _, p := range m.loadedPartitions("") {
		if w := p.ExpireLocks(now); w != nil {
			byGroup[p.Group] = append(byGroup[p.Group], pendingWrite{p, w})
		}
	}
	for g, ws := range byGroup {
		m.persist(ctx, g, ws)
	}
}

// OnMemberLeft releases the records a member of a share group holds on
// this node and closes its share session; the group coordinator calls it
// when the member leaves or is fenced.
func (m *Manager) OnMemberLeft(group, member string) {
	m.Sessions.Close(group, member)
	m.releaseMember(context.Background(), group, member, nil)
	m.maybeGroupEmpty(group)
}

// BindSession ties the member's share session, just opened, to the
// connection whose requests carry ctx (the protocol layer cancels it when
// the connection closes): then the session is closed, the member's records
// released, and the group's share partitions dropped if it has no session
// left.
func (m *Manager) BindSession(ctx context.Context, group, member string) {
	if ctx.Done() == nil {
		return // not a connection (in-process callers, tests)
	}
	conn := m.conns.Add(1)
	unwatch := context.AfterFunc(ctx, func() { m.connectionClosed(group, member, conn) })
	if !m.Sessions.bind(group, member, conn, unwatch) {
		unwatch()
	}
}

func (m *Manager) connectionClosed(group, member string, conn uint64) {
	parts, ok := m.Sessions.closeOn(group, member, conn)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(parts) > 0 {
		m.releaseMember(ctx, group, member, parts)
	}
	m.maybeGroupEmpty(group)
}

// OnGroupEmpty drops a share group's share partitions from memory when its
// last member has left (Kafka's ShareGroupListener.onGroupEmpty): the next
// fetch loads them again from the persisted state.
func (m *Manager) OnGroupEmpty(group string) {
	m.mu.Lock()
	var drop []*Partition
	for k, e := range m.parts {
		if k.group != group {
			continue
		}
		select {
		case <-e.ready:
		default:
			continue // loading: a fetch is under way
		}
		delete(m.parts, k)
		if e.p != nil {
			drop = append(drop, e.p)
		}
	}
	m.mu.Unlock()
	for _, p := range drop {
		p.Fence()
	}
}

// releaseMember releases member's records in the share partitions of
// parts (all of the group's when nil).
func (m *Manager) releaseMember(ctx context.Context, group, member string, parts []TopicPartition) {
	var ws []pendingWrite
	for _, p := range m.loadedPartitions(group) {
		if parts != nil && !containsTP(parts, TopicPartition{p.TopicID, p.Partition}) {
			continue
		}
		if w := p.ReleaseMember(member); w != nil {
			ws = append(ws, pendingWrite{p, w})
		}
	}
	m.persist(ctx, group, ws)
}

func containsTP(parts []TopicPartition, tp TopicPartition) bool {
	for _, p := range parts {
		if p == tp {
			return true
		}
	}
	return false
}

// Retain drops the share partitions keep refuses: the broker calls it from
// its image subscriber with the partitions this node leads and their
// leader epochs (Kafka's SharePartitionManager leadership listener). A
// dropped partition is fenced; a later fetch loads it again from the
// persisted state.
func (m *Manager) Retain(keep func(topic string, partition, leaderEpoch int32) bool) {
	m.mu.Lock()
	var drop []*Partition
	for k, e := range m.parts {
		select {
		case <-e.ready:
		default:
			continue // loading: checked by its first fetch's read
		}
		if e.err != nil || !keep(e.p.Topic, e.p.Partition, e.p.leaderEpochUnlocked()) {
			delete(m.parts, k)
			if e.p != nil {
				drop = append(drop, e.p)
			}
		}
	}
	m.mu.Unlock()
	for _, p := range drop {
		p.Fence()
	}
}

// leaderEpochUnlocked reads the leader epoch set once by Load; it is
// called under Manager.mu, which may not take the partition's lock.
func (p *Partition) leaderEpochUnlocked() int32 { return p.loadedEpoch.Load() }

// Run expires acquisition locks every tick until ctx ends.
func (m *Manager) Run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			m.ExpireLocks(wctx)
			cancel()
		}
	}
}

// parseISODuration parses Java's Duration.parse format as Kafka's
// share.auto.offset.reset=by_duration takes it: P[nD][T[nH][nM][n[.n]S]],
// non-negative.
func parseISODuration(s string) (time.Duration, bool) {
	s = strings.ToUpper(s)
	if !strings.HasPrefix(s, "P") || len(s) < 3 {
		return 0, false
	}
	s = s[1:]
	var total time.Duration
	inTime := false
	units := map[bool]map[byte]time.Duration{
		false: {'D': 24 * time.Hour},
		true:  {'H': time.Hour, 'M': time.Minute, 'S': time.Second},
	}
	for len(s) > 0 {
		if s[0] == 'T' {
			if inTime {
				return 0, false
			}
			inTime = true
			s = s[1:]
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, false
		}
		unit, ok := units[inTime][s[i]]
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || v < 0 || v*float64(unit) > float64(1<<62) {
			return 0, false
		}
		total += time.Duration(v * float64(unit))
		s = s[i+1:]
	}
	return total, true
}
