//go:build integration

package integration

// Bad input between nodes: KRaft requests on a controller's CONTROLLER
// listener from a node that is not a voter, with a stale or future epoch, a
// wrong cluster id, a bad topic-partition, and garbled frames. Each gets
// Kafka's error code (or, for a frame that cannot be parsed, a closed
// connection); none moves the quorum to a new epoch, and the metadata log
// stays intact: the quorum keeps committing, every controller restarts
// from its log, and kafka-dump-log.sh reads it without complaint.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

const metadataTopic = "__cluster_metadata"

var metadataTopicID = [16]byte{15: 1}

func voteReq(clusterID string, epoch, candidate, lastEpoch int32, lastOffset int64, preVote bool) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.ClusterID = kmsg.StringPtr(clusterID)
	r.VoterID = -1
	t := kmsg.NewVoteRequestTopic()
	t.Topic = metadataTopic
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch, p.CandidateID, p.LastOffsetEpoch, p.LastOffset, p.PreVote = epoch, candidate, lastEpoch, lastOffset, preVote
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func beginReq(clusterID string, epoch, leader int32) *kmsg.BeginQuorumEpochRequest {
	r := kmsg.NewPtrBeginQuorumEpochRequest()
	r.ClusterID = kmsg.StringPtr(clusterID)
	r.VoterID = -1
	t := kmsg.NewBeginQuorumEpochRequestTopic()
	t.Topic = metadataTopic
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func endReq(clusterID string, epoch, leader int32) *kmsg.EndQuorumEpochRequest {
	r := kmsg.NewPtrEndQuorumEpochRequest()
	r.ClusterID = kmsg.StringPtr(clusterID)
	t := kmsg.NewEndQuorumEpochRequestTopic()
	t.Topic = metadataTopic
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.LeaderID, p.LeaderEpoch = leader, epoch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func raftFetchReq(clusterID string, replica, epoch int32, offset int64, lastEpoch int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.ClusterID = kmsg.StringPtr(clusterID)
	r.ReplicaID = replica
	r.ReplicaState.ID = replica
	r.MaxWaitMillis = 0
	r.MaxBytes = 1 << 20
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = metadataTopic, metadataTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.LogStartOffset, p.PartitionMaxBytes = epoch, offset, lastEpoch, -1, 1<<20
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// raftCodes returns the top-level and the partition error code of a KRaft
// response (partition -1 when there is none).
func raftCodes(resp kmsg.Response) (top, part int16) {
	part = -1
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.BeginQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.EndQuorumEpochResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.FetchResponse:
		top = r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			part = r.Topics[0].Partitions[0].ErrorCode
		}
	}
	return top, part
}

func codeName(c int16) string {
	if c == -1 {
		return "(none)"
	}
	if c == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(c); err != nil {
		return err.(*kerr.Error).Message
	}
	return fmt.Sprint(c)
}

// TestClusterControllerBadInput sends bad KRaft requests to the leader and
// to a follower of a 3-controller quorum (with one broker).
func TestClusterControllerBadInput(t *testing.T) {
	c := StartCluster(t, ClusterOptions{Controllers: 3, Brokers: 1})
	leader, q := c.WaitLeader(20*time.Second, 0)
	var follower, third *ClusterNode
	for _, n := range c.Controllers() {
		switch {
		case n.ID == leader.ID:
		case follower == nil:
			follower = n
		default:
			third = n
		}
	}
	epoch := q.LeaderEpoch
	hw0 := q.HW
	t.Logf("leader %d, epoch %d, high watermark %d; follower %d", leader.ID, epoch, hw0, follower.ID)
	const wrongCluster = "AAAAAAAAAAAAAAAAAAAAAA"

	dial := func(n *ClusterNode) *protocol.Client {
		cl, err := dialController(n.CtrlAddr)
		if err != nil {
			t.Fatalf("dial controller %d: %v", n.ID, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	lc, fc := dial(leader), dial(follower)

	type tc struct {
		name      string
		to        *protocol.Client
		req       kmsg.Request
		version   int16
		top, part int16 // wanted codes; part -1: no partition in the answer
		granted   bool
	}
	const none = -1
	cases := []tc{
		// Cluster id.
		{"Vote, wrong cluster id", fc, voteReq(wrongCluster, epoch+1, leader.ID, epoch, q.HW, false), 2, kerr.InconsistentClusterID.Code, none, false},
		{"BeginQuorumEpoch, wrong cluster id", fc, beginReq(wrongCluster, epoch+1, follower.ID), 1, kerr.InconsistentClusterID.Code, none, false},
		{"EndQuorumEpoch, wrong cluster id", fc, endReq(wrongCluster, epoch, leader.ID), 1, kerr.InconsistentClusterID.Code, none, false},
		{"Fetch, wrong cluster id", lc, raftFetchReq(wrongCluster, follower.ID, epoch, 0, 0), 17, kerr.InconsistentClusterID.Code, none, false},
		// Stale epochs.
		{"pre-vote, stale epoch", fc, voteReq(c.ClusterID, epoch-1, leader.ID, 0, 0, true), 2, 0, kerr.FencedLeaderEpoch.Code, false},
		{"BeginQuorumEpoch, stale epoch", fc, beginReq(c.ClusterID, epoch-1, leader.ID), 1, 0, kerr.FencedLeaderEpoch.Code, false},
		{"EndQuorumEpoch, stale epoch", fc, endReq(c.ClusterID, epoch-1, leader.ID), 1, 0, kerr.FencedLeaderEpoch.Code, false},
		{"Fetch, stale epoch", lc, raftFetchReq(c.ClusterID, follower.ID, epoch-1, 0, 0), 17, 0, kerr.FencedLeaderEpoch.Code, false},
		{"Fetch, future epoch", lc, raftFetchReq(c.ClusterID, follower.ID, epoch+5, 0, 0), 17, 0, kerr.UnknownLeaderEpoch.Code, false},
		{"Fetch to a follower", fc, raftFetchReq(c.ClusterID, 42, epoch, 0, 0), 17, 0, kerr.NotLeaderForPartition.Code, false},
		// A pre-vote from a voter while the leader is alive is refused.
		{"pre-vote while the leader is alive", fc, voteReq(c.ClusterID, epoch+1, third.ID, epoch, 1<<40, true), 2, 0, 0, false},
		// Invalid arguments.
		{"Vote, last epoch after the candidate epoch", fc, voteReq(c.ClusterID, epoch+1, leader.ID, epoch+2, 0, false), 2, 0, kerr.InvalidRequest.Code, false},
		{"Vote, negative candidate id", fc, voteReq(c.ClusterID, epoch+1, -5, epoch, 0, false), 2, 0, kerr.InvalidRequest.Code, false},
		{"Fetch, last fetched epoch after the current epoch", lc, raftFetchReq(c.ClusterID, 42, epoch, 5, epoch+1), 17, 0, kerr.InvalidRequest.Code, false},
		{"Fetch, negative offset", lc, raftFetchReq(c.ClusterID, 42, epoch, -3, 0), 17, 0, kerr.InvalidRequest.Code, false},
	}
	// Wrong topic: top-level INVALID_REQUEST.
	wt := voteReq(c.ClusterID, epoch+1, leader.ID, epoch, 0, false)
	wt.Topics[0].Topic = "not-metadata"
	cases = append(cases, tc{"Vote, wrong topic", fc, wt, 2, kerr.InvalidRequest.Code, none, false})
	wf := raftFetchReq(c.ClusterID, 42, epoch, 0, 0)
	wf.Topics[0].TopicID = [16]byte{1}
	cases = append(cases, tc{"Fetch, wrong topic id", lc, wf, 17, kerr.InvalidRequest.Code, none, false})

	for _, k := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := k.to.RequestVersion(ctx, k.req, k.version)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", k.name, err)
			continue
		}
		top, part := raftCodes(resp)
		if top != k.top || (k.part != none && part != k.part) {
			t.Errorf("%s: top-level %s, partition %s; want %s, %s", k.name, codeName(top), codeName(part), codeName(k.top), codeName(k.part))
		}
		if v, ok := resp.(*kmsg.VoteResponse); ok && len(v.Topics) == 1 && len(v.Topics[0].Partitions) == 1 && v.Topics[0].Partitions[0].VoteGranted != k.granted {
			t.Errorf("%s: vote granted %v", k.name, v.Topics[0].Partitions[0].VoteGranted)
		}
	}

	// A Fetch from an unknown replica at an offset beyond the log end: a
	// diverging epoch, not records, and no error.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	resp, err := lc.RequestVersion(ctx, raftFetchReq(c.ClusterID, 42, epoch, 1<<40, epoch), 17)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	fp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || len(fp.RecordBatches) != 0 || fp.DivergingEpoch.EndOffset < 0 || fp.DivergingEpoch.EndOffset > 1<<30 {
		t.Errorf("Fetch beyond the log end: error %s, %d bytes of records, diverging epoch %+v; want a diverging epoch", codeName(fp.ErrorCode), len(fp.RecordBatches), fp.DivergingEpoch)
	}

	// Garbled frames close the connection.
	garbled := map[string][]byte{
		// Vote v2 header, body cut short.
		"truncated Vote": func() []byte {
			b := binary.BigEndian.AppendUint16(nil, 52)
			b = binary.BigEndian.AppendUint16(b, 2)
			b = binary.BigEndian.AppendUint32(b, 7)
			b = binary.BigEndian.AppendUint16(b, 2)
			b = append(b, "it"...)
			b = append(b, 0)         // header tags
			b = append(b, 0x17, 'x') // compact string length 22, 1 byte
			return b
		}(),
		"Fetch v17 body of random bytes": func() []byte {
			b := binary.BigEndian.AppendUint16(nil, 1)
			b = binary.BigEndian.AppendUint16(b, 17)
			b = binary.BigEndian.AppendUint32(b, 8)
			b = binary.BigEndian.AppendUint16(b, 2)
			b = append(b, "it"...)
			b = append(b, 0)
			for i := 0; i < 64; i++ {
				b = append(b, byte(0xff-i*7))
			}
			return b
		}(),
		// Produce is not served on the CONTROLLER listener.
		"Produce on CONTROLLER": func() []byte {
			b := binary.BigEndian.AppendUint16(nil, 0)
			b = binary.BigEndian.AppendUint16(b, 9)
			b = binary.BigEndian.AppendUint32(b, 9)
			b = binary.BigEndian.AppendUint16(b, 2)
			b = append(b, "it"...)
			b = append(b, 0, 0, 1, 0, 0, 0x75, 0x30, 1, 0)
			return b
		}(),
	}
	for name, body := range garbled {
		for _, n := range []*ClusterNode{leader, follower} {
			conn, err := net.DialTimeout("tcp", n.CtrlAddr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(frame); err != nil {
				t.Fatalf("%s: write: %v", name, err)
			}
			buf := make([]byte, 256)
			if k, err := conn.Read(buf); k > 0 || err == nil || strings.Contains(err.Error(), "timeout") {
				t.Errorf("%s to controller %d: answered %d bytes / %v instead of closing the connection", name, n.ID, k, err)
			}
			conn.Close()
		}
	}

	// Nothing moved the quorum: same leader and epoch, and it keeps
	// committing (NoOp records, a topic through the broker).
	createTopicsRTT(t, c.Node(4).Addr, "it-after-bad", 1)
	waitFor(t, 10*time.Second, "the quorum to commit past the bad input", func() error {
		ld, q2, err := c.Leader()
		if err != nil {
			return err
		}
		if ld.ID != leader.ID || q2.LeaderEpoch != epoch {
			return fmt.Errorf("leader %d epoch %d, was %d epoch %d", ld.ID, q2.LeaderEpoch, leader.ID, epoch)
		}
		if q2.HW <= hw0 {
			return fmt.Errorf("high watermark %d, was %d", q2.HW, hw0)
		}
		for id, leo := range q2.Voters {
			if leo < q2.HW {
				return fmt.Errorf("voter %d at %d < high watermark %d", id, leo, q2.HW)
			}
		}
		return nil
	})

	// A candidate outside the voter set: Kafka 4.4 does not check the
	// candidate against the voter set (KafkaRaftClient.handleVoteRequest;
	// KIP-853 lets a replica the local set does not list yet win), so a
	// Vote and a pre-vote at a higher epoch with a log that looks ahead are
	// granted, and the voter moves to that epoch. A BeginQuorumEpoch naming
	// a leader outside the set makes Kafka 4.4's controller exit; kgo-broker
	// answers and goes on. The disturbed voter's pre-votes are refused by
	// the others while their leader is alive (KIP-996), so a voter leads
	// and the quorum goes on committing.
	for _, k := range []tc{
		{"Vote from a non-voter", fc, voteReq(c.ClusterID, epoch+10, 42, epoch, 1<<40, false), 2, 0, 0, true},
		{"pre-vote from a non-voter", fc, voteReq(c.ClusterID, epoch+20, 42, epoch, 1<<40, true), 2, 0, 0, true},
		{"BeginQuorumEpoch from a non-voter", fc, beginReq(c.ClusterID, epoch+30, 42), 1, 0, none, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := k.to.RequestVersion(ctx, k.req, k.version)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", k.name, err)
			continue
		}
		top, part := raftCodes(resp)
		if top != k.top || (k.part != none && part != k.part) {
			t.Errorf("%s: top-level %s, partition %s; want %s, %s", k.name, codeName(top), codeName(part), codeName(k.top), codeName(k.part))
		}
		if v, ok := resp.(*kmsg.VoteResponse); ok && len(v.Topics) == 1 && len(v.Topics[0].Partitions) == 1 && v.Topics[0].Partitions[0].VoteGranted != k.granted {
			t.Errorf("%s: vote granted %v, want %v", k.name, v.Topics[0].Partitions[0].VoteGranted, k.granted)
		}
	}
	hw1 := hw0
	if _, q1, err := c.Leader(); err == nil {
		hw1 = q1.HW
	}
	createTopicsRTT(t, c.Node(4).Addr, "it-after-non-voter", 1)
	waitFor(t, 30*time.Second, "the voters to lead and commit again after the non-voter's requests", func() error {
		ld, q2, err := c.Leader()
		if err != nil {
			return err
		}
		if ld.ID == 42 {
			return fmt.Errorf("leader %d epoch %d", ld.ID, q2.LeaderEpoch)
		}
		if q2.HW <= hw1 {
			return fmt.Errorf("high watermark %d, was %d", q2.HW, hw1)
		}
		return nil
	})
	_, q3, _ := c.Leader()
	if _, ok := q3.Observers[42]; ok {
		t.Logf("note: the leader lists replica 42 (the fake observer) among observers: %+v", q3.Observers)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every controller restarts from its log; the quorum re-forms with at
	// least the committed offsets, and kafka-dump-log.sh reads each log.
	for _, n := range c.Controllers() {
		if code := n.Stop(0); code != 0 {
			t.Fatalf("controller %d exited %d after SIGTERM", n.ID, code)
		}
	}
	for _, n := range c.Controllers() {
		n.Start()
	}
	for _, n := range c.Controllers() {
		c.WaitNodeReady(n, 30*time.Second)
	}
	waitFor(t, 30*time.Second, "the quorum to re-form", func() error {
		_, q4, err := c.Leader()
		if err != nil {
			return err
		}
		if q4.HW < q3.HW {
			return fmt.Errorf("high watermark %d < %d before the restart", q4.HW, q3.HW)
		}
		return nil
	})
	if toolsInstalled() {
		for _, n := range c.Controllers() {
			segs, _ := filepath.Glob(filepath.Join(n.DataDir, "__cluster_metadata-0", "*.log"))
			r := KafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", strings.Join(segs, ","))
			if r.ExitCode != 0 || strings.Contains(r.Stdout+r.Stderr, "Exception") || strings.Contains(r.Stdout+r.Stderr, "corrupt") {
				t.Errorf("kafka-dump-log.sh on controller %d's metadata log:\n%s", n.ID, tail(r.String(), 40))
			}
			if !strings.Contains(r.Stdout, "it-after-bad-0") {
				t.Errorf("controller %d's metadata log has no TopicRecord for it-after-bad-0", n.ID)
			}
		}
	}
}

// TestClusterRoleConfigErrors: a broker-only or controller-only node with a
// config Kafka refuses exits non-zero at once, with Kafka's message.
func TestClusterRoleConfigErrors(t *testing.T) {
	t.Parallel()
	const voters = "controller.quorum.voters=1@127.0.0.1:19193\n"
	const common = "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
	cases := []struct{ name, props, want string }{
		{"broker serving the CONTROLLER listener",
			"process.roles=broker\nnode.id=4\n" + voters + common + "controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://127.0.0.1:19192,CONTROLLER://127.0.0.1:19193\n",
			"controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role"},
		{"controller with a client listener",
			"process.roles=controller\nnode.id=1\n" + voters + common + "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:19193,PLAINTEXT://127.0.0.1:19192\n",
			"The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller"},
		{"controller not among the voters",
			"process.roles=controller\nnode.id=2\n" + voters + common + "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:19194\n",
			"If process.roles contains the 'controller' role, the node id 2 must be included in the set of voters"},
		{"broker among the voters",
			"process.roles=broker\nnode.id=1\n" + voters + common + "controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://127.0.0.1:19192\n",
			"If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of voters"},
		{"controller without controller.listener.names",
			"process.roles=controller\nnode.id=1\n" + voters + common + "listeners=CONTROLLER://127.0.0.1:19193\n",
			"Missing required configuration"}, // the key is quoted (JSON-escaped in the log)
		{"controller whose controller listener is not in listeners",
			"process.roles=controller\nnode.id=1\n" + voters + common + "controller.listener.names=CTRL\nlisteners=CONTROLLER://127.0.0.1:19193\n",
			"controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role"},
	}
	for _, k := range cases {
		dir := t.TempDir()
		props := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(props, []byte(k.props+"log.dirs="+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := RunCommand(t, RunOpts{Timeout: 20 * time.Second, Dir: dir, Hermetic: true}, brokerBin, props)
		if r.ExitCode == 0 || r.TimedOut || !strings.Contains(r.Stdout+r.Stderr, k.want) {
			t.Errorf("%s: want a non-zero exit saying %q:\n%s", k.name, k.want, r)
		}
	}
}
