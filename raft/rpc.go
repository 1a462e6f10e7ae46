package raft

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KRaft RPCs on the CONTROLLER listener, translated between kmsg and the
// core's Message. Versions sent: Vote 2 (KIP-996 pre-vote), BeginQuorumEpoch 1,
// EndQuorumEpoch 1, Fetch 17, FetchSnapshot 1. Versions served: whatever kmsg decodes; requests
// are validated as KafkaRaftClient does (cluster id, single topic-partition
// __cluster_metadata-0, argument ranges) before they reach the core.

// MetadataTopic is the KRaft metadata topic; its id is Uuid.METADATA_TOPIC_ID (0, 1).
const MetadataTopic = "__cluster_metadata"

// MetadataTopicID is Uuid.METADATA_TOPIC_ID.
var MetadataTopicID = [16]byte{15: 1}

// ServedVersions are the API versions HandleRequest serves on the CONTROLLER
// listener (Kafka 4.x): Fetch 4-17, Vote 0-2, BeginQuorumEpoch 0-1,
// EndQuorumEpoch 0-1, DescribeQuorum 0-2, FetchSnapshot 0-1, UpdateRaftVoter
// 0 (update_voter.go). For the broker's version registry.
var ServedVersions = map[int16][2]int16{
	1:  {4, 17},
	52: {0, 2},
	53: {0, 1},
	54: {0, 1},
	55: {0, 2},
	59: {0, 1},
	82: {0, 0},
}

const (
	voteVersion     = 2
	beginVersion    = 1
	endVersion      = 1
	fetchVersion    = 17
	fetchSnapVer    = 1
	controllerLname = "CONTROLLER"
)

func (n *Node) clusterIDPtr() *string { s := n.cfg.ClusterID; return &s }

func (n *Node) validClusterID(id *string) bool { return id == nil || *id == n.cfg.ClusterID }

// toKmsgRequest renders a core request for the wire.
func (n *Node) toKmsgRequest(m Message) kmsg.Request {
	switch m.Type {
	case MsgVote:
		r := kmsg.NewPtrVoteRequest()
		r.Version = voteVersion
		r.ClusterID = n.clusterIDPtr()
		r.VoterID = m.To
		t := kmsg.NewVoteRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewVoteRequestTopicPartition()
		p.CandidateEpoch, p.CandidateID = m.Epoch, n.cfg.NodeID
		p.LastOffsetEpoch, p.LastOffset, p.PreVote = m.LastEpoch, m.LastOffset, m.PreVote
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case MsgBeginQuorumEpoch:
		r := kmsg.NewPtrBeginQuorumEpochRequest()
		r.Version = beginVersion
		r.ClusterID = n.clusterIDPtr()
		r.VoterID = m.To
		t := kmsg.NewBeginQuorumEpochRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
		p.LeaderID, p.LeaderEpoch = m.LeaderID, m.Epoch
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		if ep, ok := n.cfg.Voters[n.cfg.NodeID]; ok {
			le := kmsg.NewBeginQuorumEpochRequestLeaderEndpoint()
			le.Name, le.Host, le.Port = controllerLname, ep.Host, uint16(ep.Port)
			r.LeaderEndpoints = append(r.LeaderEndpoints, le)
		}
		return r
	case MsgEndQuorumEpoch:
		r := kmsg.NewPtrEndQuorumEpochRequest()
		r.Version = endVersion
		r.ClusterID = n.clusterIDPtr()
		t := kmsg.NewEndQuorumEpochRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewEndQuorumEpochRequestTopicPartition()
		p.LeaderID, p.LeaderEpoch = m.LeaderID, m.Epoch
		for _, s := range m.PreferredSuccessors {
			pc := kmsg.NewEndQuorumEpochRequestTopicPartitionPreferredCandidate()
			pc.CandidateID = s
			p.PreferredCandidates = append(p.PreferredCandidates, pc)
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		if ep, ok := n.cfg.Voters[n.cfg.NodeID]; ok {
			le := kmsg.NewEndQuorumEpochRequestLeaderEndpoint()
			le.Name, le.Host, le.Port = controllerLname, ep.Host, uint16(ep.Port)
			r.LeaderEndpoints = append(r.LeaderEndpoints, le)
		}
		return r
	case MsgFetch:
		r := kmsg.NewPtrFetchRequest()
		r.Version = fetchVersion
		r.ClusterID = n.clusterIDPtr()
		r.ReplicaID = n.cfg.NodeID
		r.ReplicaState.ID = n.cfg.NodeID
		r.ReplicaState.Epoch = -1
		r.MaxWaitMillis = int32(m.MaxWaitMs)
		r.MaxBytes = maxFetchBytes
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = MetadataTopic, MetadataTopicID
		p := kmsg.NewFetchRequestTopicPartition()
		p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = m.Epoch, m.LastOffset, m.LastEpoch
		p.LogStartOffset = -1
		p.PartitionMaxBytes = maxFetchBytes
		p.ReplicaDirectoryID = n.cfg.DirectoryID
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case MsgFetchSnapshot:
		r := kmsg.NewPtrFetchSnapshotRequest()
		r.Version = fetchSnapVer
		r.ClusterID = n.clusterIDPtr()
		r.ReplicaID = n.cfg.NodeID
		r.MaxBytes = m.MaxBytes
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.CurrentLeaderEpoch, p.Position = m.Epoch, m.Position
		if m.SnapshotID != nil {
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.Offset, m.SnapshotID.Epoch
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	panic(fmt.Sprintf("raft: no request for %v", m.Type))
}

// fromKmsgResponse turns the response to req (a core request) into a Message.
func (n *Node) fromKmsgResponse(req Message, resp kmsg.Response) (Message, error) {
	out := Message{From: req.To, To: n.cfg.NodeID, ID: req.ID, Epoch: -1, LeaderID: NoLeader, ReadFrom: -1}
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		out.Type, out.PreVote, out.Error = MsgVoteResp, req.PreVote, r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			p := r.Topics[0].Partitions[0]
			out.Epoch, out.LeaderID, out.Granted = p.LeaderEpoch, p.LeaderID, p.VoteGranted
			if out.Error == 0 {
				out.Error = p.ErrorCode
			}
		}
	case *kmsg.BeginQuorumEpochResponse:
		out.Type, out.Error = MsgBeginQuorumEpochResp, r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			p := r.Topics[0].Partitions[0]
			out.Epoch, out.LeaderID = p.LeaderEpoch, p.LeaderID
			if out.Error == 0 {
				out.Error = p.ErrorCode
			}
		}
	case *kmsg.EndQuorumEpochResponse:
		out.Type, out.Error = MsgEndQuorumEpochResp, r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			p := r.Topics[0].Partitions[0]
			out.Epoch, out.LeaderID = p.LeaderEpoch, p.LeaderID
			if out.Error == 0 {
				out.Error = p.ErrorCode
			}
		}
	case *kmsg.FetchResponse:
		out.Type, out.Error = MsgFetchResp, r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			p := r.Topics[0].Partitions[0]
			out.Epoch, out.LeaderID, out.HighWatermark = p.CurrentLeader.LeaderEpoch, p.CurrentLeader.LeaderID, p.HighWatermark
			if out.Error == 0 {
				out.Error = p.ErrorCode
			}
			if p.DivergingEpoch.Epoch >= 0 && p.DivergingEpoch.EndOffset >= 0 {
				out.Diverging = &OffsetAndEpoch{Offset: p.DivergingEpoch.EndOffset, Epoch: p.DivergingEpoch.Epoch}
			}
			if p.SnapshotID.Epoch >= 0 && p.SnapshotID.EndOffset >= 0 {
				out.SnapshotID = &OffsetAndEpoch{Offset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
			}
			if len(p.RecordBatches) > 0 && out.Error == 0 {
				es, err := entriesFromBatches(p.RecordBatches)
				if err != nil {
					return out, err
				}
				out.Entries = es
			}
		} else if out.Error == 0 {
			return out, errors.New("fetch response without __cluster_metadata-0")
		}
	case *kmsg.FetchSnapshotResponse:
		out.Type, out.Error = MsgFetchSnapshotResp, r.ErrorCode
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			p := r.Topics[0].Partitions[0]
			out.Epoch, out.LeaderID = p.CurrentLeader.LeaderEpoch, p.CurrentLeader.LeaderID
			if out.Error == 0 {
				out.Error = p.ErrorCode
			}
			if p.SnapshotID.EndOffset >= 0 && p.SnapshotID.Epoch >= 0 && out.Error == 0 {
				out.SnapshotID = &OffsetAndEpoch{Offset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
			}
			out.Size, out.Position, out.Data = p.Size, p.Position, p.Bytes
		} else if out.Error == 0 {
			return out, errors.New("fetch snapshot response without __cluster_metadata-0")
		}
	default:
		return out, fmt.Errorf("unexpected response %T", resp)
	}
	return out, nil
}

// HandleRequest serves a KRaft request arriving on the CONTROLLER listener:
// Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum,
// UpdateRaftVoter.
// Kafka errors are in the response; a Go error means "close the connection".
func (n *Node) HandleRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.DescribeQuorumRequest:
		return n.describeQuorum(r), nil
	case *kmsg.UpdateRaftVoterRequest:
		return n.updateVoter(r), nil
	}
	m, errResp, err := n.fromKmsgRequest(req)
	if err != nil || errResp != nil {
		return errResp, err
	}
	ch := make(chan Message, 1)
	n.mu.Lock()
	if err := n.usableLocked(); err != nil {
		n.mu.Unlock()
		return nil, err
	}
	n.nextIn++
	m.ID = n.nextIn
	m.To = n.cfg.NodeID
	n.waiters[m.ID] = ch
	if fr, ok := req.(*kmsg.FetchRequest); ok && m.From >= 0 {
		// validated by fromKmsgRequest: one topic, one partition
		n.dirIDs[m.From] = fr.Topics[0].Partitions[0].ReplicaDirectoryID
	}
	n.fail(n.core.Tick(n.nowMs()))
	n.fail(n.core.Step(m))
	n.fail(n.processReadyLocked())
	n.mu.Unlock()
	select {
	case out, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		return n.toKmsgResponse(req, out), nil
	case <-ctx.Done():
		n.mu.Lock()
		delete(n.waiters, m.ID)
		n.mu.Unlock()
		return nil, ctx.Err()
	}
}

func singleTP(topics int, topic string, parts int, part int32) bool {
	return topics == 1 && topic == MetadataTopic && parts == 1 && part == 0
}

// fromKmsgRequest validates req and returns the core message, or a complete
// error response.
func (n *Node) fromKmsgRequest(req kmsg.Request) (Message, kmsg.Response, error) {
	m := Message{Epoch: -1, LeaderID: NoLeader, ReadFrom: -1}
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		resp := r.ResponseKind().(*kmsg.VoteResponse)
		if !n.validClusterID(r.ClusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return m, resp, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
			!singleTP(len(r.Topics), r.Topics[0].Topic, len(r.Topics[0].Partitions), r.Topics[0].Partitions[0].Partition) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return m, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		// Argument ranges are checked by the core (a partition-level
		// INVALID_REQUEST, as Kafka answers).
		m.Type, m.From, m.Epoch = MsgVote, p.CandidateID, p.CandidateEpoch
		m.PreVote, m.LastEpoch, m.LastOffset = p.PreVote, p.LastOffsetEpoch, p.LastOffset
	case *kmsg.BeginQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.BeginQuorumEpochResponse)
		if !n.validClusterID(r.ClusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return m, resp, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
			!singleTP(len(r.Topics), r.Topics[0].Topic, len(r.Topics[0].Partitions), r.Topics[0].Partitions[0].Partition) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return m, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		m.Type, m.From, m.Epoch, m.LeaderID = MsgBeginQuorumEpoch, p.LeaderID, p.LeaderEpoch, p.LeaderID
	case *kmsg.EndQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.EndQuorumEpochResponse)
		if !n.validClusterID(r.ClusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return m, resp, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
			!singleTP(len(r.Topics), r.Topics[0].Topic, len(r.Topics[0].Partitions), r.Topics[0].Partitions[0].Partition) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return m, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		m.Type, m.From, m.Epoch, m.LeaderID = MsgEndQuorumEpoch, p.LeaderID, p.LeaderEpoch, p.LeaderID
		m.PreferredSuccessors = append(m.PreferredSuccessors, p.PreferredSuccessors...)
		for _, c := range p.PreferredCandidates {
			m.PreferredSuccessors = append(m.PreferredSuccessors, c.CandidateID)
		}
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		if !n.validClusterID(r.ClusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return m, resp, nil
		}
		ok := len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 && r.Topics[0].Partitions[0].Partition == 0
		if ok {
			if r.Version >= 13 {
				ok = r.Topics[0].TopicID == MetadataTopicID
			} else {
				ok = r.Topics[0].Topic == MetadataTopic
			}
		}
		if !ok {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return m, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		// Argument ranges are checked by the core (handleFetch: a
		// partition-level INVALID_REQUEST, as Kafka answers).
		m.Type, m.From = MsgFetch, r.ReplicaID
		if r.Version >= 15 {
			m.From = r.ReplicaState.ID
		}
		m.Epoch, m.LastOffset, m.LastEpoch, m.MaxWaitMs = p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, int64(r.MaxWaitMillis)
	case *kmsg.FetchSnapshotRequest:
		resp := r.ResponseKind().(*kmsg.FetchSnapshotResponse)
		if !n.validClusterID(r.ClusterID) {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return m, resp, nil
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return m, resp, nil
		}
		p := r.Topics[0].Partitions[0]
		if r.Topics[0].Topic != MetadataTopic || p.Partition != 0 {
			t := kmsg.NewFetchSnapshotResponseTopic()
			t.Topic = r.Topics[0].Topic
			rp := kmsg.NewFetchSnapshotResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
			le := n.LeaderAndEpoch()
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = le.LeaderID, le.Epoch
			t.Partitions = append(t.Partitions, rp)
			resp.Topics = append(resp.Topics, t)
			return m, resp, nil
		}
		id := OffsetAndEpoch{Offset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
		m.Type, m.From, m.Epoch, m.SnapshotID = MsgFetchSnapshot, r.ReplicaID, p.CurrentLeaderEpoch, &id
		m.Position, m.MaxBytes = p.Position, r.MaxBytes
	default:
		return m, nil, fmt.Errorf("raft: unexpected request %T", req)
	}
	return m, nil, nil
}

// toKmsgResponse renders the core's response to req.
func (n *Node) toKmsgResponse(req kmsg.Request, m Message) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		resp := r.ResponseKind().(*kmsg.VoteResponse)
		t := kmsg.NewVoteResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewVoteResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.VoteGranted = m.Error, m.LeaderID, m.Epoch, m.Granted
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		n.addVoteEndpoints(resp, m.LeaderID)
		return resp
	case *kmsg.BeginQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.BeginQuorumEpochResponse)
		t := kmsg.NewBeginQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = m.Error, m.LeaderID, m.Epoch
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp
	case *kmsg.EndQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.EndQuorumEpochResponse)
		t := kmsg.NewEndQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewEndQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = m.Error, m.LeaderID, m.Epoch
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = MetadataTopic, MetadataTopicID
		p := kmsg.NewFetchResponseTopicPartition()
		p.ErrorCode, p.HighWatermark = m.Error, m.HighWatermark
		p.LastStableOffset, p.LogStartOffset = -1, n.Status().LogStartOffset
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = m.LeaderID, m.Epoch
		if m.Diverging != nil {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = m.Diverging.Epoch, m.Diverging.Offset
		}
		if m.SnapshotID != nil {
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.Offset, m.SnapshotID.Epoch
		}
		for _, e := range m.Entries {
			p.RecordBatches = append(p.RecordBatches, e.Raw...)
		}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		if m.LeaderID >= 0 {
			if ep, ok := n.cfg.Voters[m.LeaderID]; ok && r.Version >= 16 {
				b := kmsg.NewFetchResponseBroker()
				b.NodeID, b.Host, b.Port = m.LeaderID, ep.Host, int32(ep.Port)
				resp.Brokers = append(resp.Brokers, b)
			}
		}
		return resp
	case *kmsg.FetchSnapshotRequest:
		resp := r.ResponseKind().(*kmsg.FetchSnapshotResponse)
		t := kmsg.NewFetchSnapshotResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewFetchSnapshotResponseTopicPartition()
		p.ErrorCode = m.Error
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = m.LeaderID, m.Epoch
		if m.SnapshotID != nil {
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.Offset, m.SnapshotID.Epoch
			p.Size, p.Position, p.Bytes = m.Size, m.Position, m.Data
		}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		if m.LeaderID >= 0 {
			if ep, ok := n.cfg.Voters[m.LeaderID]; ok && r.Version >= 1 {
				e := kmsg.NewFetchSnapshotResponseNodeEndpoint()
				e.NodeID, e.Host, e.Port = m.LeaderID, ep.Host, uint16(ep.Port)
				resp.NodeEndpoints = append(resp.NodeEndpoints, e)
			}
		}
		return resp
	}
	return nil
}

func (n *Node) addVoteEndpoints(resp *kmsg.VoteResponse, leader int32) {
	if ep, ok := n.cfg.Voters[leader]; ok && resp.Version >= 1 {
		e := kmsg.NewVoteResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port = leader, ep.Host, uint16(ep.Port)
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	}
}

// observerSessionTimeoutMs: an observer that has not fetched for this long
// is no longer described (LeaderState.OBSERVER_SESSION_TIMEOUT_MS).
const observerSessionTimeoutMs = 300_000

// describeQuorum answers DescribeQuorum (v0-2) from the leader's view.
func (n *Node) describeQuorum(r *kmsg.DescribeQuorumRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
		!singleTP(len(r.Topics), r.Topics[0].Topic, len(r.Topics[0].Partitions), r.Topics[0].Partitions[0].Partition) {
		if len(r.Topics) == 1 {
			t.Topic = r.Topics[0].Topic
		}
		p.ErrorCode = kerr.UnknownTopicOrPartition.Code
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp
	}
	st := n.Status()
	if st.Role != RoleLeader {
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		msg := kerr.NotLeaderForPartition.Description
		if r.Version >= 2 {
			p.ErrorMessage = &msg
		}
		p.LeaderID, p.LeaderEpoch = st.LeaderID, st.Epoch
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp
	}
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = st.LeaderID, st.Epoch, st.HighWatermark
	conv := func(rs ReplicaStatus) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		x := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		x.ReplicaID, x.LogEndOffset = rs.ReplicaID, rs.LogEndOffset
		x.LastFetchTimestamp, x.LastCaughtUpTimestamp = rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp
		return x
	}
	now := n.nowMs()
	for _, v := range st.Voters {
		if v.ReplicaID == n.cfg.NodeID {
			v.LastFetchTimestamp, v.LastCaughtUpTimestamp = now, now
		}
		p.CurrentVoters = append(p.CurrentVoters, conv(v))
	}
	n.mu.Lock()
	for _, o := range st.Observers {
		if now-o.LastFetchTimestamp > observerSessionTimeoutMs {
			continue // gone: LeaderState.clearInactiveObservers
		}
		x := conv(o)
		// An observer is described with the directory id it fetches with
		// (a static quorum's voters have none).
		x.ReplicaDirectoryID = n.dirIDs[o.ReplicaID]
		p.Observers = append(p.Observers, x)
	}
	n.mu.Unlock()
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if r.Version >= 2 {
		for _, id := range n.voters {
			ep := n.cfg.Voters[id]
			nd := kmsg.NewDescribeQuorumResponseNode()
			nd.NodeID = id
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = controllerLname, ep.Host, uint16(ep.Port)
			nd.Listeners = append(nd.Listeners, l)
			resp.Nodes = append(resp.Nodes, nd)
		}
	}
	return resp
}
