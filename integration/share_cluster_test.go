//go:build integration

package integration

// Share groups on three nodes (KIP-932, issue 17): the share coordinator's
// leader (of the __share_group_state partition that holds the group's state
// for the partition) is killed with SIGKILL while the group consumes; the
// group goes on against the other nodes and every record is accepted exactly
// once: none acknowledged before the kill comes back, none is lost.

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareCoordinatorOf asks FindCoordinator (key type 2, KIP-932) which node
// is the share coordinator of the group's state for topic partition p.
func shareCoordinatorOf(t *testing.T, cl *kgo.Client, group, topic string, p int32) int32 {
	t.Helper()
	var id int32 = -1
	waitFor(t, 60*time.Second, "the share coordinator of "+group, func() error {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		md.Topics = append(md.Topics, mt)
		mresp, err := md.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
			return fmt.Errorf("metadata of %s: %+v", topic, mresp.Topics)
		}
		tid := mresp.Topics[0].TopicID
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 2
		// The key as Kafka's SharePartitionKey.asCoordinatorKey writes it:
		// the topic id in Uuid.toString's URL-safe base64 without padding.
		req.CoordinatorKeys = []string{fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(tid[:]), p)}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator: %+v", resp.Coordinators)
		}
		id = resp.Coordinators[0].NodeID
		return nil
	})
	return id
}

func TestShareGroupClusterKillCoordinator(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor":                 "3",
		"offsets.topic.num.partitions":                     "6",
		"share.coordinator.state.topic.replication.factor": "3",
		"share.coordinator.state.topic.min.isr":            "2",
		"share.coordinator.state.topic.num.partitions":     "6",
		"default.replication.factor":                       "3",
		"min.insync.replicas":                              "2",
		"replica.lag.time.max.ms":                          "5000",
		// As TestTxnClusterFailover: looser quorum deadlines on two busy cores.
		"controller.quorum.election.timeout.ms": "3000",
		"controller.quorum.fetch.timeout.ms":    "4000",
		"controller.quorum.request.timeout.ms":  "3000",
		"broker.session.timeout.ms":             "6000",
		"broker.heartbeat.interval.ms":          "1000",
	}})
	const topic, group, n = "it-share-cl", "it-share-cl-g", 600
	cl := c.Client(nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	r, err := adm.CreateTopic(ctxT(t, 30*time.Second), 1, 3, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 1)
	MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", strings.Join(c.BrokerAddrs(), ","),
		"--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest")
	for i := 0; i < n; i += 10 {
		var recs []*kgo.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", j))})
		}
		if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	first := runShareTool(t, 120*time.Second, strings.Join(c.BrokerAddrs(), ","), "consume", "topic="+topic, "group="+group,
		fmt.Sprint("expect=", n), "consumers=2", "stopat=200", "c.max.poll.records=20")
	if first.ExitCode != 0 || len(eventsOf(first.Events, "done")) == 0 {
		t.Fatalf("first ShareTool run failed: %s\n%s", javaFailure(first), tail(first.String(), 80))
	}
	acc1, _ := shareAccepted(t, first)
	if len(acc1) < 200 || len(acc1) >= n {
		t.Fatalf("first run accepted %d values, want at least 200 and fewer than %d", len(acc1), n)
	}
	coord := shareCoordinatorOf(t, cl, group, topic, 0)
	victim := c.Node(coord)
	victim.Kill()
	var seeds []string
	for _, nd := range c.Nodes {
		if nd.ID != coord {
			seeds = append(seeds, nd.Addr)
		}
	}
	start := time.Now()
	second := runShareTool(t, 150*time.Second, strings.Join(seeds, ","), "consume", "topic="+topic, "group="+group,
		fmt.Sprint("expect=", n-len(acc1)), "consumers=2", "c.max.poll.records=20")
	if second.ExitCode != 0 || len(eventsOf(second.Events, "done")) == 0 {
		t.Fatalf("second ShareTool run (node %d killed) failed: %s\n%s", coord, javaFailure(second), tail(second.String(), 80))
	}
	acc2, seen2 := shareAccepted(t, second)
	for i := range acc1 {
		if seen2[i] {
			t.Errorf("v%d was accepted before the share coordinator's node %d was killed and delivered again after it", i, coord)
		}
	}
	for i := 0; i < n; i++ {
		if got := acc1[i] + acc2[i]; got != 1 {
			t.Errorf("v%d accepted %d times over both runs, want 1", i, got)
		}
	}
	t.Logf("MEASURE share group, share coordinator node %d killed: %d accepted before, %d after in %v, 0 redelivered",
		coord, len(acc1), len(acc2), time.Since(start).Round(100*time.Millisecond))
	victim.Start()
	c.WaitNodeReady(victim, 60*time.Second)
}
