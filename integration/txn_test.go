//go:build integration

package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionCoordinator drives the transaction coordinator of a single
// node with franz-go and Kafka's own tools: the producer finds its
// coordinator (which creates __transaction_state) and initializes, adds
// partitions and an offsets partition, and commits (raw requests, at the
// versions franz-go negotiates: EndTxn v5 with transaction version 2;
// partition leaders do not take transactional records yet); kafka-transactions.sh lists and
// describes the transaction; kafka-dump-log.sh --transaction-log-decoder
// reads __transaction_state. Markers need the WriteTxnMarkers handler, so
// the commit may stay PrepareCommit here.
func TestTransactionCoordinator(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-txn"
	createTopic(t, b, topic, 2, nil)
	cl := b.Client()
	defer cl.Close()
	ctx := ctxT(t, 90*time.Second)

	// FindCoordinator creates __transaction_state and answers
	// COORDINATOR_NOT_AVAILABLE until its partition has a leader.
	deadline := time.Now().Add(60 * time.Second)
	for {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"it-txn-1"}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		c := resp.Coordinators[0]
		if c.ErrorCode == 0 {
			if c.NodeID != 1 || int(c.Port) != b.Port {
				t.Fatalf("coordinator %+v", c)
			}
			break
		}
		if err := kerr.ErrorForCode(c.ErrorCode); err != kerr.CoordinatorNotAvailable && err != kerr.CoordinatorLoadInProgress {
			t.Fatalf("FindCoordinator: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no transaction coordinator within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// InitProducerId retries while the partition loads.
	var pid int64
	var epoch int16
	for {
		ip := kmsg.NewPtrInitProducerIDRequest()
		id := "it-txn-1"
		ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 30000
		resp, err := ip.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err == nil {
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			break
		} else if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatalf("InitProducerId: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = "it-txn-1", pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0, 1}
	ap.Topics = append(ap.Topics, at)
	apr, err := ap.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range apr.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("AddPartitionsToTxn %s-%d: %v", rt.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "it-txn-1", pid, epoch, "it-txn-group"
	if aor, err := ao.RequestWith(ctx, cl); err != nil || aor.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, aor)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "it-txn-1", pid, epoch, true
	if etr, err := et.RequestWith(ctx, cl); err != nil || etr.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", err, etr)
	}

	adm := kadm.NewClient(b.Client())
	defer adm.Close()
	described, err := adm.DescribeTransactions(ctx, "it-txn-1")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["it-txn-1"]
	if !ok || d.Err != nil {
		t.Fatalf("describe: %+v", described)
	}
	if d.State != "PrepareCommit" && d.State != "CompleteCommit" {
		t.Fatalf("state %s after the commit, want PrepareCommit or CompleteCommit", d.State)
	}
	if d.ProducerID != pid || d.TimeoutMillis != 30000 {
		t.Fatalf("described %+v", d)
	}

	r := MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-transactions.sh", "--bootstrap-server", b.Addr, "list")
	if !strings.Contains(r.Stdout, "it-txn-1") {
		t.Fatalf("kafka-transactions.sh list:\n%s", r)
	}
	r = MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-transactions.sh", "--bootstrap-server", b.Addr,
		"describe", "--transactional-id", "it-txn-1")
	if !strings.Contains(r.Stdout, "it-txn-1") || !strings.Contains(r.Stdout, "Commit") {
		t.Fatalf("kafka-transactions.sh describe:\n%s", r)
	}
	cl.Close()
	adm.Close()

	// Kafka's transaction log decoder reads what the coordinator wrote.
	b.Stop(0)
	segs, _ := filepath.Glob(filepath.Join(b.DataDir, "__transaction_state-*", "*.log"))
	files := segs
	if len(files) == 0 {
		t.Fatal("no __transaction_state segments")
	}
	r = MustKafkaTool(t, RunOpts{Timeout: 3 * time.Minute}, "kafka-dump-log.sh", "--transaction-log-decoder", "--files",
		strings.Join(files, ","))
	for _, want := range []string{`"transactionalId":"it-txn-1"`, `"transactionStatus":"Empty"`, `"transactionStatus":"Ongoing"`,
		`"transactionStatus":"PrepareCommit"`, `{"topic":"__consumer_offsets","partitionIds":[`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kafka-dump-log.sh --transaction-log-decoder: no %s in:\n%s", want, tail(r.Stdout, 40))
		}
	}
	if strings.Contains(r.Stdout+r.Stderr, "Exception") {
		t.Errorf("kafka-dump-log.sh --transaction-log-decoder:\n%s", tail(r.String(), 60))
	}
}
