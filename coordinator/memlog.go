package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// MemLog is an in-memory Writer for tests of coordinators: each partition is
// a list of records with a high watermark that either follows every append
// (AutoCommit) or moves only when the test says (Commit), so a test can hold
// a write uncommitted and watch what waits for it.
type MemLog struct {
	mu    lockrank.Mutex // a leaf: watchers' wake never blocks
	parts map[TopicPartition]*memPart
	// AutoCommit moves the high watermark to the log end after every append.
	autoCommit bool
	// failNext fails the next appends with this error.
	failNext error
	// verifyErr is what VerifyTransaction answers.
	verifyErr error
}

type memPart struct {
	recs     []Loaded
	end      int64
	hw       int64
	epoch    int32 // the leader epoch appends must carry; -1 accepts any
	watchers map[int]func()
	seq      int
}

// NewMemLog returns an empty MemLog; autoCommit sets AutoCommit.
func NewMemLog(autoCommit bool) *MemLog {
	m := &MemLog{parts: map[TopicPartition]*memPart{}, autoCommit: autoCommit}
	m.mu.SetRank(lockrank.MemLog)
	return m
}

func (m *MemLog) part(tp TopicPartition) *memPart {
	p := m.parts[tp]
	if p == nil {
		p = &memPart{epoch: -1, watchers: map[int]func(){}}
		m.parts[tp] = p
	}
	return p
}

// SetAutoCommit turns AutoCommit on or off.
func (m *MemLog) SetAutoCommit(on bool) {
	m.mu.Lock()
	m.autoCommit = on
	m.mu.Unlock()
}

// FailAppends makes appends fail with err until called again with nil.
func (m *MemLog) FailAppends(err error) {
	m.mu.Lock()
	m.failNext = err
	m.mu.Unlock()
}

// FailVerification makes VerifyTransaction answer err (nil: success).
func (m *MemLog) FailVerification(err error) {
	m.mu.Lock()
	m.verifyErr = err
	m.mu.Unlock()
}

// SetLeaderEpoch makes appends at any other epoch fail with
// NOT_LEADER_OR_FOLLOWER (-1 accepts any).
func (m *MemLog) SetLeaderEpoch(tp TopicPartition, epoch int32) {
	m.mu.Lock()
	m.part(tp).epoch = epoch
	m.mu.Unlock()
}

// Commit moves the high watermark of tp to offset (at most the log end).
func (m *MemLog) Commit(tp TopicPartition, offset int64) {
	m.mu.Lock()
	p := m.part(tp)
	p.hw = max(p.hw, min(offset, p.end))
	ws := p.wakers()
	m.mu.Unlock()
	for _, w := range ws {
		w()
	}
}

// CommitAll moves the high watermark of tp to its log end.
func (m *MemLog) CommitAll(tp TopicPartition) { m.Commit(tp, 1<<62) }

// Truncate drops the records of tp at and after offset, as a new leader's
// log would have them dropped (the high watermark moves back with it).
func (m *MemLog) Truncate(tp TopicPartition, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.part(tp)
	n := 0
	for n < len(p.recs) && p.recs[n].Offset < offset {
		n++
	}
	p.recs = p.recs[:n]
	p.end = min(p.end, offset)
	p.hw = min(p.hw, p.end)
}

// Records returns what tp holds.
func (m *MemLog) Records(tp TopicPartition) []Loaded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Loaded(nil), m.part(tp).recs...)
}

// LogEnd returns the log end offset of tp.
func (m *MemLog) LogEnd(tp TopicPartition) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.part(tp).end
}

func (p *memPart) wakers() []func() {
	out := make([]func(), 0, len(p.watchers))
	for _, w := range p.watchers {
		out = append(out, w)
	}
	return out
}

func (m *MemLog) Append(tp TopicPartition, leaderEpoch int32, b Batch) (int64, error) {
	m.mu.Lock()
	if m.failNext != nil {
		err := m.failNext
		m.mu.Unlock()
		return 0, err
	}
	p := m.part(tp)
	if p.epoch >= 0 && p.epoch != leaderEpoch {
		m.mu.Unlock()
		return 0, kerr.NotLeaderForPartition
	}
	if b.Marker != nil {
		mk := *b.Marker
		p.recs = append(p.recs, Loaded{Offset: p.end, ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch, Transactional: true, Marker: &mk})
		p.end++
	} else {
		for _, r := range b.Records {
			p.recs = append(p.recs, Loaded{Offset: p.end, ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch,
				Transactional: b.Transactional, Key: clone(r.Key), Value: clone(r.Value)})
			p.end++
		}
	}
	if m.autoCommit {
		p.hw = p.end
	}
	end := p.end
	ws := p.wakers()
	m.mu.Unlock()
	for _, w := range ws {
		w()
	}
	return end, nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func (m *MemLog) HighWatermark(tp TopicPartition) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.part(tp).hw, nil
}

func (m *MemLog) Watch(tp TopicPartition, wake func()) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.part(tp)
	p.seq++
	id := p.seq
	p.watchers[id] = wake
	return func() {
		m.mu.Lock()
		delete(p.watchers, id)
		m.mu.Unlock()
	}, nil
}

func (m *MemLog) Read(tp TopicPartition, fn func(Loaded) error) (int64, error) {
	m.mu.Lock()
	p := m.part(tp)
	recs := append([]Loaded(nil), p.recs...)
	end := p.end
	m.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// VerifyTransaction answers what FailVerification set, with no guard.
func (m *MemLog) VerifyTransaction(_ context.Context, _ TopicPartition, _ string, _ int64, _ int16, _ bool) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nil, m.verifyErr
}
