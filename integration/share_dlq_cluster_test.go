//go:build integration

package integration

// The share groups' dead-letter queue across nodes (KIP-1191): the share
// partition's leader writes the DLQ records to the DLQ partition's leader,
// another node (Produce, acks=-1, over the inter-broker listener).

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareGroupDLQCluster(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: map[string]string{
		"offsets.topic.replication.factor":                 "3",
		"share.coordinator.state.topic.replication.factor": "3",
		"share.coordinator.state.topic.min.isr":            "2",
		"share.coordinator.state.topic.num.partitions":     "3",
		// as TestShareGroupClusterKillCoordinator: looser quorum deadlines
		"controller.quorum.election.timeout.ms": "3000",
		"controller.quorum.fetch.timeout.ms":    "4000",
		"controller.quorum.request.timeout.ms":  "3000",
		"broker.session.timeout.ms":             "6000",
		"broker.heartbeat.interval.ms":          "1000",
	}})
	const topic, dlq, group = "it-share-dlq-cl", "dlq.it-share-dlq-cl", "it-share-dlq-cl-g"
	cl := c.Client(nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// the source partition on node 1, the DLQ partition on node 2
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, x := range []struct {
		name    string
		node    int32
		configs map[string]string
	}{{topic, 1, nil}, {dlq, 2, map[string]string{"errors.deadletterqueue.group.enable": "true"}}} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = x.name, -1, -1
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = 0, []int32{x.node}
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
		for k, v := range x.configs {
			tc := kmsg.NewCreateTopicsRequestTopicConfig()
			tc.Name, tc.Value = k, kmsg.StringPtr(v)
			ct.Configs = append(ct.Configs, tc)
		}
		req.Topics = append(req.Topics, ct)
	}
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("create %s: error %d", rt.Topic, rt.ErrorCode)
		}
	}
	waitLeaders(t, c, topic, 1)
	waitLeaders(t, c, dlq, 1)
	MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", strings.Join(c.BrokerAddrs(), ","),
		"--alter", "--entity-type", "groups", "--entity-name", group, "--add-config",
		"share.auto.offset.reset=earliest,errors.deadletterqueue.topic.name="+dlq+",errors.deadletterqueue.copy.record.enable=true")
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := runShareTool(t, 120*time.Second, strings.Join(c.BrokerAddrs(), ","), "consume", "topic="+topic, "group="+group,
		"expect=20", "reject=3,11,17", "idle.ms=2000")
	if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
		t.Fatalf("ShareTool consume failed: %s\n%s", javaFailure(r), tail(r.String(), 80))
	}
	rd := c.Client(nil, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(got) < 3 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			for _, h := range rec.Headers {
				if h.Key == "__dlq.errors.offset" {
					got[string(h.Value)] = string(rec.Key) + "=" + string(rec.Value)
				}
			}
		})
	}
	want := map[string]string{"3": "k3=v3", "11": "k11=v11", "17": "k17=v17"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("DLQ records by offset %v, want %v", got, want)
	}
}
