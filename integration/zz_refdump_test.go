//go:build refdump

package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRefDump(t *testing.T) {
	b := StartBroker(t, BrokerOptions{})
	createTopic(t, b, "dumpme", 1, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"})
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeTopic
	r.ResourceName = "dumpme"
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Resources[0].Configs {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		t.Logf("%s=%s source=%d ro=%v sensitive=%v", c.Name, v, c.Source, c.ReadOnly, c.IsSensitive)
	}
	r2 := kmsg.NewDescribeConfigsRequestResource()
	r2.ResourceType = kmsg.ConfigResourceTypeBroker
	r2.ResourceName = ""
	req.Resources = []kmsg.DescribeConfigsRequestResource{r2}
	resp, err = req.RequestWith(ctxT(t, 30*time.Second), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Resources[0].Configs {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		t.Logf("cluster-default %s=%s source=%d", c.Name, v, c.Source)
	}
	dd := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", b.Addr, "--describe", "--topic", "dumpme")
	t.Logf("%q", dd.Stdout)
	q := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-server", b.Addr, "describe", "--status")
	t.Logf("%s", q.Stdout)
	q = MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-server", b.Addr, "describe", "--replication")
	t.Logf("%q", q.Stdout)
}
