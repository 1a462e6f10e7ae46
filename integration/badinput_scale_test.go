//go:build integration

package integration

// Bad input at scale (issue 16): a client that opens connections up to the
// broker's max.connections, fetch sessions filling the KIP-227 session
// cache, and one CreateTopics of 100,000 partitions. Each gets what Apache
// Kafka 4.4 answers, and the broker goes on serving the clients it served
// before. Every test passes in reference mode (KGO_BROKER_BIN pointing at
// integration/testdata/kafka-reference-broker) too.

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsAnswered sends ApiVersions v0 on c and reports whether an
// answer came back within wait (false: no answer yet, or closed).
func apiVersionsAnswered(c net.Conn, wait time.Duration) bool {
	// size, key 18, version 0, correlation id 1, null client id
	frame := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
	c.SetWriteDeadline(time.Now().Add(wait))
	if _, err := c.Write(frame); err != nil {
		return false
	}
	return readAnswer(c, wait)
}

// readAnswer reads one response frame from c within wait.
func readAnswer(c net.Conn, wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	defer c.SetReadDeadline(time.Time{})
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return false
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	if n < 0 || n > 1<<20 {
		return false
	}
	_, err := io.CopyN(io.Discard, c, int64(n))
	return err == nil
}

// TestScaleConnectionFlood: with max.connections=60, a client opens
// connections until they are refused. Kafka's acceptor stops accepting at
// the limit, the extra connections wait in the listen backlog
// (socket.listen.backlog.size, 50) unanswered, the kernel refuses the
// rest, and the acceptor accepts again as connections close; the clients
// connected before the flood are served all along.
func TestScaleConnectionFlood(t *testing.T) {
	t.Parallel()
	const limit, backlog, maxFlood = 60, 50, 300
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{"max.connections": fmt.Sprint(limit)}})
	const topic = "it-scale-conns"
	createTopic(t, b, topic, 1, nil)
	// A producer and a consumer, connected before the flood.
	prod := b.Client(kgo.DefaultProduceTopic(topic))
	defer prod.Close()
	cons := b.Client(kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	defer cons.Close()
	if err := prod.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if fs := cons.PollRecords(ctxT(t, 30*time.Second), 1); len(fs.Records()) != 1 {
		t.Fatalf("consuming before the flood: %v", fs.Errors())
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Past the limit the acceptor stops accepting; the kernel queues
	// socket.listen.backlog.size (50) more handshakes and drops the SYNs
	// beyond, so dials start timing out.
	refused := 0
	for len(conns) < maxFlood && refused < 3 {
		c, err := net.DialTimeout("tcp", b.Addr, time.Second)
		if err != nil {
			refused++
			continue
		}
		refused = 0
		conns = append(conns, c)
	}
	if len(conns) < limit || len(conns) > limit+backlog+1 {
		t.Fatalf("%d connections completed with max.connections=%d and socket.listen.backlog.size=%d, want between %d and %d",
			len(conns), limit, backlog, limit, limit+backlog+1)
	}
	flood := len(conns)
	// Each connection asks ApiVersions at once; those accepted under the
	// limit answer within the wait, the others wait in the backlog.
	ok := make([]bool, flood)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[i] = apiVersionsAnswered(c, 5*time.Second)
		}()
	}
	wg.Wait()
	var open, waiting []net.Conn
	for i, c := range conns {
		if ok[i] {
			open = append(open, c)
		} else {
			waiting = append(waiting, c)
		}
	}
	answered := len(open)
	// The two clients hold a few connections (bootstrap, the broker, the
	// group coordinator), the flood the rest of the limit.
	if answered > limit || answered < limit-12 {
		t.Fatalf("%d of %d flood connections answered with max.connections=%d", answered, flood, limit)
	}
	// The clients connected before are still served.
	if err := prod.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
		t.Fatalf("producing during the flood: %v", err)
	}
	if fs := cons.PollRecords(ctxT(t, 30*time.Second), 1); len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "during" {
		t.Fatalf("consuming during the flood: %v %v", fs.Records(), fs.Errors())
	}
	// Closing the answered connections frees slots: connections waiting
	// in the backlog are accepted and answer the ApiVersions they sent.
	for _, c := range open {
		c.Close()
	}
	late := 0
	var mu sync.Mutex
	for _, c := range waiting[:20] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if readAnswer(c, 30*time.Second) {
				mu.Lock()
				late++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if late != 20 {
		t.Fatalf("%d of 20 waiting connections answered after %d slots were freed", late, answered)
	}
	t.Logf("MEASURE max.connections=%d, socket.listen.backlog.size=%d: %d flood connections completed, %d answered, 20 waiting ones answered once slots were freed", limit, backlog, flood, answered)
}

// TestScaleFetchSessionCache: max.incremental.fetch.session.cache.slots=16
// (Kafka: 8 cache shards of 2). 40 consumers' full fetches ask for a
// session: 16 get one, the others are answered without a session (session
// id 0) and still get their records; none evicts another (KIP-227: a
// consumer's session can only evict one unused for 120 s). The sessions
// that exist go on incrementally.
func TestScaleFetchSessionCache(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{"max.incremental.fetch.session.cache.slots": "16"}})
	const topic = "it-scale-sessions"
	createTopic(t, b, topic, 2, nil)
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	for p := range int32(2) {
		if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata: %v %+v", err, mresp)
	}
	tid := mresp.Topics[0].TopicID
	fetch := func(sessionID, epoch int32, parts ...int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 13
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		req.SessionID, req.SessionEpoch = sessionID, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = tid
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, 0, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(parts) > 0 {
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch session %d epoch %d: %v", sessionID, epoch, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	records := func(resp *kmsg.FetchResponse) int {
		n := 0
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				if len(rp.RecordBatches) > 0 {
					n++
				}
			}
		}
		return n
	}
	var sessions []int32
	sessionless := 0
	for i := range 40 {
		resp := fetch(0, 0, 0)
		if records(resp) != 1 {
			t.Fatalf("full fetch %d: no records", i)
		}
		if resp.SessionID != 0 {
			sessions = append(sessions, resp.SessionID)
		} else {
			sessionless++
		}
	}
	if len(sessions) != 16 || sessionless != 24 {
		t.Fatalf("%d sessions created and %d fetches answered without one, want 16 and 24", len(sessions), sessionless)
	}
	// A bigger session does not evict either: consumers' sessions are
	// evictable by another consumer only once unused for 120 s.
	if resp := fetch(0, 0, 0, 1); resp.SessionID != 0 || records(resp) != 2 {
		t.Fatalf("a 2-partition full fetch: session %d, %d partitions with records", resp.SessionID, records(resp))
	}
	// Every session still exists: an incremental fetch at the next epoch
	// (still at offset 0) is answered from the session with its records.
	for _, id := range sessions {
		if resp := fetch(id, 1); resp.SessionID != id || records(resp) != 1 {
			t.Fatalf("incremental fetch of session %d: session %d, %d partitions with records", id, resp.SessionID, records(resp))
		}
	}
	// And a real client consumes through it all.
	cons := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	got := 0
	for got < 2 {
		fs := cons.PollRecords(ctxT(t, 30*time.Second), 10)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("consumer: %v", errs)
		}
		got += len(fs.Records())
	}
	t.Logf("MEASURE fetch session cache of 16: 16 sessions, 24 full fetches served without one, 0 evicted")
}

// TestScaleCreateTopics100k: one CreateTopics of 100,000 partitions, as one
// topic and as 20 topics of 5,000, is refused whole with POLICY_VIOLATION
// "Excessively large number of partitions per request." (the controller's
// MAX_PARTITIONS_PER_BATCH, 10,000) and creates nothing; 9,999 partitions
// with two configs pass that check but not the 10,000 records one request
// may write ("Unable to perform excessively large batch operation.");
// CreatePartitions adding 20,000 partitions is refused the same way. The
// controller goes on creating topics.
func TestScaleCreateTopics100k(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	cl := b.Client()
	defer cl.Close()
	type topicReq struct {
		partitions int32
		configs    map[string]string
	}
	create := func(topics map[string]topicReq) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 60000
		for name, tr := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, tr.partitions, 1
			for k, v := range tr.configs {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, kmsg.StringPtr(v)
				rt.Configs = append(rt.Configs, c)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctxT(t, 90*time.Second), cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		return resp
	}
	wantRefused := func(what string, code int16, msg *string, want string) {
		t.Helper()
		got := "<nil>"
		if msg != nil {
			got = *msg
		}
		if code != kerr.PolicyViolation.Code || got != want {
			t.Fatalf("%s: %v %q, want POLICY_VIOLATION %q", what, kerr.ErrorForCode(code), got, want)
		}
	}
	const tooMany, tooLarge = "Excessively large number of partitions per request.", "Unable to perform excessively large batch operation."
	start := time.Now()
	resp := create(map[string]topicReq{"it-scale-100k": {partitions: 100000}})
	wantRefused("one topic of 100,000 partitions", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tooMany)
	many := map[string]topicReq{}
	for i := range 20 {
		many[fmt.Sprintf("it-scale-5k-%02d", i)] = topicReq{partitions: 5000}
	}
	resp = create(many)
	if len(resp.Topics) != 20 {
		t.Fatalf("20 topics of 5,000 partitions: %d answered", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		wantRefused("20 topics of 5,000 partitions: "+rt.Topic, rt.ErrorCode, rt.ErrorMessage, tooMany)
	}
	took := time.Since(start)
	resp = create(map[string]topicReq{"it-scale-9999": {partitions: 9999, configs: map[string]string{"retention.ms": "100000", "cleanup.policy": "delete"}}})
	wantRefused("9,999 partitions and 2 configs", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tooLarge)

	// Nothing was created, and the controller still creates topics.
	mresp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mresp.Topics {
		if mt.Topic != nil && strings.HasPrefix(*mt.Topic, "it-scale-") {
			t.Fatalf("refused topic %s exists", *mt.Topic)
		}
	}
	if resp := create(map[string]topicReq{"it-scale-after": {partitions: 3}}); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics after the refusals: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 60000
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = "it-scale-after", 20003
	cp.Topics = append(cp.Topics, ct)
	cpr, err := cp.RequestWith(ctxT(t, 90*time.Second), cl)
	if err != nil || len(cpr.Topics) != 1 {
		t.Fatalf("CreatePartitions: %v %+v", err, cpr)
	}
	wantRefused("CreatePartitions of 20,000 more", cpr.Topics[0].ErrorCode, cpr.Topics[0].ErrorMessage, "Excessively large number of additional partitions per request.")
	t.Logf("MEASURE CreateTopics of 100,000 partitions refused in %v (both requests)", took)
}
