package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// slowLog is a MemLog whose reads (loading a partition) wait until released.
type slowLog struct {
	*coordinator.MemLog
	release chan struct{}
}

func (l *slowLog) Read(tp coordinator.TopicPartition, fn func(coordinator.Loaded) error) (int64, error) {
	<-l.release
	return l.MemLog.Read(tp, fn)
}

// While a partition loads, its transactional ids answer
// COORDINATOR_LOAD_IN_PROGRESS, and so does ListTransactions.
func TestLoadInProgress(t *testing.T) {
	h := newHarness(t, 1, TV2, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := h.c.InitProducerID(ctx, "t1", 1000, nil); err != nil {
		t.Fatal(err)
	}
	h.c.Close()

	slow := &slowLog{MemLog: h.log, release: make(chan struct{})}
	cfg := h.cfg
	cfg.Writer = slow
	c := New(cfg)
	defer c.Close()
	c.OnImage(nil, h.cache.Image())

	if _, _, err := c.InitProducerID(ctx, "t1", 1000, nil); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("InitProducerId while loading: %v", err)
	}
	d := c.HandleDescribeTransactions(ctx, &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"t1"}})
	if d.TransactionStates[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("DescribeTransactions while loading: %+v", d.TransactionStates[0])
	}
	l := c.HandleListTransactions(ctx, kmsg.NewPtrListTransactionsRequest())
	if l.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("ListTransactions while loading: %+v", l)
	}
	close(slow.release)
	deadline := time.Now().Add(5 * time.Second)
	for c.Loading() {
		if time.Now().After(deadline) {
			t.Fatal("did not load")
		}
		time.Sleep(time.Millisecond)
	}
	if pid, epoch, err := c.InitProducerID(ctx, "t1", 1000, nil); err != nil || pid != 1000 || epoch != 1 {
		t.Fatalf("InitProducerId after loading: %d %d %v", pid, epoch, err)
	}
}
