package raft

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KRaft RPCs on the CONTROLLER listener, translated between kmsg and the
// core's Message. Versions sent, the newest Kafka 4.4 serves: Vote 2 (KIP-996
// pre-vote; v1 added the voter keys: ReplicaDirectoryId of the candidate,
// VoterId/VoterDirectoryId of the receiver), BeginQuorumEpoch 1 (voter key,
// LeaderEndpoints), EndQuorumEpoch 1 (PreferredCandidates with directory
// ids, LeaderEndpoints), Fetch 17 (ReplicaDirectoryId), FetchSnapshot 1
// (ReplicaDirectoryId), UpdateRaftVoter 0, AddRaftVoter 1 (AckWhenCommitted),
// RemoveRaftVoter 0, and ApiVersions 3 to a voter being added. Responses
// carry the leader's endpoint (NodeEndpoints) from Vote/BeginQuorumEpoch/
// EndQuorumEpoch v1, Fetch v16 and FetchSnapshot v1. Requests are validated
// as KafkaRaftClient does (cluster id, single topic-partition
// __cluster_metadata-0, argument ranges) before they reach the core.

// MetadataTopic is the KRaft metadata topic; its id is Uuid.METADATA_TOPIC_ID (0, 1).
const MetadataTopic = "__cluster_metadata"

// MetadataTopicID is Uuid.METADATA_TOPIC_ID.
var MetadataTopicID = [16]byte{15: 1}

// FetcherHWNotSupported is the default of Fetch v18's HighWatermark
// (Long.MAX_VALUE, FetchRequest.HIGH_WATERMARK_NOT_SUPPORTED in spirit): the
// fetcher does not say which high watermark it knows.
const FetcherHWNotSupported int64 = 1<<63 - 1

// ServedVersions are the API versions HandleRequest serves on the CONTROLLER
// listener (Kafka 4.4): Fetch 4-18, Vote 0-2, BeginQuorumEpoch 0-1,
// EndQuorumEpoch 0-1, DescribeQuorum 0-2, FetchSnapshot 0-1, AddRaftVoter
// 0-1, RemoveRaftVoter 0, UpdateRaftVoter 0. For the broker's version registry.
var ServedVersions = map[int16][2]int16{
	1:  {4, 18},
	52: {0, 2},
	53: {0, 1},
	54: {0, 1},
	55: {0, 2},
	59: {0, 1},
	80: {0, 1},
	81: {0, 0},
	82: {0, 0},
}

const (
	voteVersion        = 2
	beginVersion       = 1
	endVersion         = 1
	fetchVersion       = 18
	fetchSnapVer       = 1
	updateVoterVersion = 0
	addVoterVersion    = 1
	removeVoterVersion = 0
	apiVersionsVersion = 3
)

// listenerName is the default controller listener of the node.
func (n *Node) listenerName() string { return n.cfg.ListenerName }

// leaderEndpoint picks the endpoint on the default listener out of a
// message's leader endpoints.
func (n *Node) leaderEndpoint(eps []Endpoint) (Endpoint, bool) {
	for _, e := range eps {
		if e.Name == n.cfg.ListenerName {
			return e, true
		}
	}
	return Endpoint{}, false
}

// nodeEndpoints turns a response's NodeEndpoints entry for leader into
// endpoints on the default listener.
func (n *Node) nodeEndpoints(leader int32, id int32, host string, port int) []Endpoint {
	if leader < 0 || id != leader {
		return nil
	}
	return []Endpoint{{Name: n.cfg.ListenerName, Host: host, Port: uint16(port)}}
}

func (n *Node) clusterIDPtr() *string { s := n.cfg.ClusterID; return &s }

func (n *Node) validClusterID(id *string) bool { return id == nil || *id == n.cfg.ClusterID }

// clusterIDMismatch is the AddRaftVoter/RemoveRaftVoter message of a wrong cluster id.
func (n *Node) clusterIDMismatch(id *string) *string {
	s := fmt.Sprintf("The given id \"%s\" doesn't match the cluster id \"%s\"", *id, n.cfg.ClusterID)
	return &s
}

// fillCurrentLeader sets an UpdateRaftVoter response's CurrentLeader from
// this node's view (RaftUtil.updateVoterResponse).
func (n *Node) fillCurrentLeader(resp *kmsg.UpdateRaftVoterResponse) {
	st := n.Status()
	le := n.LeaderAndEpoch()
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = le.LeaderID, le.Epoch
	resp.CurrentLeader.Host, resp.CurrentLeader.Port = "", -1
	if e, ok := n.leaderEndpoint(st.LeaderEndpoints); ok && le.LeaderID >= 0 {
		resp.CurrentLeader.Host, resp.CurrentLeader.Port = e.Host, int32(e.Port)
	}
}

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
		p.CandidateEpoch, p.CandidateID, p.CandidateDirectoryID = m.Epoch, n.cfg.NodeID, n.cfg.DirectoryID
		if m.VoterKey != nil {
			p.VoterDirectoryID = m.VoterKey.DirectoryID
		}
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
		if m.VoterKey != nil {
			p.VoterDirectoryID = m.VoterKey.DirectoryID
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		for _, e := range n.localLeaderEndpoints(m.LeaderEndpoints) {
			le := kmsg.NewBeginQuorumEpochRequestLeaderEndpoint()
			le.Name, le.Host, le.Port = e.Name, e.Host, e.Port
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
		for _, k := range m.PreferredCandidates {
			pc := kmsg.NewEndQuorumEpochRequestTopicPartitionPreferredCandidate()
			pc.CandidateID, pc.CandidateDirectoryID = k.ID, k.DirectoryID
			p.PreferredCandidates = append(p.PreferredCandidates, pc)
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		for _, e := range n.localLeaderEndpoints(m.LeaderEndpoints) {
			le := kmsg.NewEndQuorumEpochRequestLeaderEndpoint()
			le.Name, le.Host, le.Port = e.Name, e.Host, e.Port
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
		if m.HasFetcherHW {
			// v18 (KIP-1166): the high watermark this replica knows (-1
			// unknown), so the leader answers at once when it is behind.
			p.HighWatermark = m.FetcherHW
		}
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
		p.ReplicaDirectoryID = n.cfg.DirectoryID
		if m.SnapshotID != nil {
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.Offset, m.SnapshotID.Epoch
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case MsgUpdateVoter:
		r := kmsg.NewPtrUpdateRaftVoterRequest()
		r.Version = updateVoterVersion
		r.ClusterID = n.clusterIDPtr()
		r.CurrentLeaderEpoch = m.Epoch
		r.VoterID, r.VoterDirectoryID = m.Voter.Key.ID, m.Voter.Key.DirectoryID
		for _, e := range m.Voter.Endpoints {
			l := kmsg.NewUpdateRaftVoterRequestListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			r.Listeners = append(r.Listeners, l)
		}
		r.KRaftVersionFeature.MinSupportedVersion, r.KRaftVersionFeature.MaxSupportedVersion = m.Voter.KRaftMin, m.Voter.KRaftMax
		return r
	case MsgAddVoter:
		r := kmsg.NewPtrAddRaftVoterRequest()
		r.Version = addVoterVersion
		r.ClusterID = n.clusterIDPtr()
		r.TimeoutMillis = int32(m.TimeoutMs)
		r.VoterID, r.VoterDirectoryID = m.Voter.Key.ID, m.Voter.Key.DirectoryID
		for _, e := range m.Voter.Endpoints {
			l := kmsg.NewAddRaftVoterRequestListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			r.Listeners = append(r.Listeners, l)
		}
		r.AckWhenCommitted = m.AckWhenCommitted
		return r
	case MsgRemoveVoter:
		r := kmsg.NewPtrRemoveRaftVoterRequest()
		r.Version = removeVoterVersion
		r.ClusterID = n.clusterIDPtr()
		r.VoterID, r.VoterDirectoryID = m.Voter.Key.ID, m.Voter.Key.DirectoryID
		return r
	case MsgApiVersions:
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = apiVersionsVersion
		r.ClientSoftwareName, r.ClientSoftwareVersion = "kgo-broker", "1.0"
		return r
	}
	panic(fmt.Sprintf("raft: no request for %v", m.Type))
}

// localLeaderEndpoints are the endpoints a leader names in BeginQuorumEpoch
// and EndQuorumEpoch: the core's (this node's controller listeners).
func (n *Node) localLeaderEndpoints(eps []Endpoint) []Endpoint {
	if len(eps) > 0 {
		return eps
	}
	return n.cfg.LocalEndpoints
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
		for _, e := range r.NodeEndpoints {
			if eps := n.nodeEndpoints(out.LeaderID, e.NodeID, e.Host, int(e.Port)); eps != nil {
				out.LeaderEndpoints = eps
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
		for _, e := range r.NodeEndpoints {
			if eps := n.nodeEndpoints(out.LeaderID, e.NodeID, e.Host, int(e.Port)); eps != nil {
				out.LeaderEndpoints = eps
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
		for _, e := range r.NodeEndpoints {
			if eps := n.nodeEndpoints(out.LeaderID, e.NodeID, e.Host, int(e.Port)); eps != nil {
				out.LeaderEndpoints = eps
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
		for _, b := range r.Brokers {
			if eps := n.nodeEndpoints(out.LeaderID, b.NodeID, b.Host, int(b.Port)); eps != nil {
				out.LeaderEndpoints = eps
			}
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
		for _, e := range r.NodeEndpoints {
			if eps := n.nodeEndpoints(out.LeaderID, e.NodeID, e.Host, int(e.Port)); eps != nil {
				out.LeaderEndpoints = eps
			}
		}
	case *kmsg.UpdateRaftVoterResponse:
		out.Type, out.Error = MsgUpdateVoterResp, r.ErrorCode
		out.Epoch, out.LeaderID = r.CurrentLeader.LeaderEpoch, r.CurrentLeader.LeaderID
		if r.CurrentLeader.Host != "" && r.CurrentLeader.Port > 0 {
			out.LeaderEndpoints = n.nodeEndpoints(out.LeaderID, out.LeaderID, r.CurrentLeader.Host, int(r.CurrentLeader.Port))
		}
	case *kmsg.AddRaftVoterResponse:
		out.Type, out.Error, out.ErrorMessage = MsgAddVoterResp, r.ErrorCode, r.ErrorMessage
	case *kmsg.RemoveRaftVoterResponse:
		out.Type, out.Error, out.ErrorMessage = MsgRemoveVoterResp, r.ErrorCode, r.ErrorMessage
	case *kmsg.ApiVersionsResponse:
		out.Type, out.Error = MsgApiVersionsResp, r.ErrorCode
		for _, f := range r.SupportedFeatures {
			if f.Name == "kraft.version" {
				out.KRaftRange = &[2]int16{f.MinVersion, f.MaxVersion}
			}
		}
	default:
		return out, fmt.Errorf("unexpected response %T", resp)
	}
	return out, nil
}

// HandleRequest serves a KRaft request arriving on the CONTROLLER listener:
// Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum.
// Kafka errors are in the response; a Go error means "close the connection".
func (n *Node) HandleRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.DescribeQuorumRequest:
		return n.describeQuorum(r), nil
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
	n.fail(n.core.Tick(n.nowMs()))
	n.fail(n.core.Step(m))
	n.fail(n.processReadyLocked())
	n.mu.Unlock()
	select {
	case out, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		if err := n.fillFetchRecords(&out); err != nil {
			return nil, err
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
		m.Type, m.From, m.Epoch, m.FromDir = MsgVote, p.CandidateID, p.CandidateEpoch, p.CandidateDirectoryID
		m.PreVote, m.LastEpoch, m.LastOffset = p.PreVote, p.LastOffsetEpoch, p.LastOffset
		if r.Version >= 1 && r.VoterID >= 0 {
			m.VoterKey = &ReplicaKey{ID: r.VoterID, DirectoryID: p.VoterDirectoryID}
		}
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
		if r.Version >= 1 && r.VoterID >= 0 {
			m.VoterKey = &ReplicaKey{ID: r.VoterID, DirectoryID: p.VoterDirectoryID}
		}
		for _, e := range r.LeaderEndpoints {
			m.LeaderEndpoints = append(m.LeaderEndpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
		}
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
		for _, id := range p.PreferredSuccessors {
			m.PreferredCandidates = append(m.PreferredCandidates, ReplicaKey{ID: id})
		}
		for _, c := range p.PreferredCandidates {
			m.PreferredCandidates = append(m.PreferredCandidates, ReplicaKey{ID: c.CandidateID, DirectoryID: c.CandidateDirectoryID})
		}
		for _, e := range r.LeaderEndpoints {
			m.LeaderEndpoints = append(m.LeaderEndpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port})
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
		m.FromDir = p.ReplicaDirectoryID
		// v18 (KIP-1166): the fetcher's high watermark; Long.MAX_VALUE (the
		// default) means the fetcher does not send it, as before v18.
		if r.Version >= 18 && p.HighWatermark != FetcherHWNotSupported {
			m.FetcherHW, m.HasFetcherHW = p.HighWatermark, true
		}
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
		m.Position, m.MaxBytes, m.FromDir = p.Position, r.MaxBytes, p.ReplicaDirectoryID
	case *kmsg.AddRaftVoterRequest:
		if !n.validClusterID(r.ClusterID) {
			resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
			resp.ErrorCode, resp.ErrorMessage = kerr.InconsistentClusterID.Code, n.clusterIDMismatch(r.ClusterID)
			return m, resp, nil
		}
		v := Voter{Key: ReplicaKey{ID: r.VoterID, DirectoryID: r.VoterDirectoryID}}
		for _, l := range r.Listeners {
			v.Endpoints = append(v.Endpoints, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
		}
		m.Type, m.From, m.Voter, m.TimeoutMs = MsgAddVoter, -1, &v, int64(r.TimeoutMillis)
		m.AckWhenCommitted = r.AckWhenCommitted || r.Version < 1 // v0: acknowledged once committed
	case *kmsg.RemoveRaftVoterRequest:
		if !n.validClusterID(r.ClusterID) {
			resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
			resp.ErrorCode, resp.ErrorMessage = kerr.InconsistentClusterID.Code, n.clusterIDMismatch(r.ClusterID)
			return m, resp, nil
		}
		m.Type, m.From = MsgRemoveVoter, -1
		m.Voter = &Voter{Key: ReplicaKey{ID: r.VoterID, DirectoryID: r.VoterDirectoryID}}
	case *kmsg.UpdateRaftVoterRequest:
		if !n.validClusterID(r.ClusterID) {
			resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			n.fillCurrentLeader(resp)
			return m, resp, nil
		}
		v := Voter{Key: ReplicaKey{ID: r.VoterID, DirectoryID: r.VoterDirectoryID},
			KRaftMin: r.KRaftVersionFeature.MinSupportedVersion, KRaftMax: r.KRaftVersionFeature.MaxSupportedVersion}
		for _, l := range r.Listeners {
			v.Endpoints = append(v.Endpoints, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
		}
		m.Type, m.From, m.Epoch, m.Voter = MsgUpdateVoter, r.VoterID, r.CurrentLeaderEpoch, &v
	default:
		return m, nil, fmt.Errorf("raft: unexpected request %T", req)
	}
	return m, nil, nil
}

// toKmsgResponse renders the core's response to req.
func (n *Node) toKmsgResponse(req kmsg.Request, m Message) kmsg.Response {
	lep, hasLEP := n.leaderEndpoint(m.LeaderEndpoints)
	hasLEP = hasLEP && m.LeaderID >= 0
	switch r := req.(type) {
	case *kmsg.VoteRequest:
		resp := r.ResponseKind().(*kmsg.VoteResponse)
		t := kmsg.NewVoteResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewVoteResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.VoteGranted = m.Error, m.LeaderID, m.Epoch, m.Granted
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		if hasLEP && r.Version >= 1 {
			e := kmsg.NewVoteResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port = m.LeaderID, lep.Host, lep.Port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
		return resp
	case *kmsg.BeginQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.BeginQuorumEpochResponse)
		t := kmsg.NewBeginQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = m.Error, m.LeaderID, m.Epoch
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		if hasLEP && r.Version >= 1 {
			e := kmsg.NewBeginQuorumEpochResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port = m.LeaderID, lep.Host, lep.Port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
		return resp
	case *kmsg.EndQuorumEpochRequest:
		resp := r.ResponseKind().(*kmsg.EndQuorumEpochResponse)
		t := kmsg.NewEndQuorumEpochResponseTopic()
		t.Topic = MetadataTopic
		p := kmsg.NewEndQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = m.Error, m.LeaderID, m.Epoch
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		if hasLEP && r.Version >= 1 {
			e := kmsg.NewEndQuorumEpochResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port = m.LeaderID, lep.Host, lep.Port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
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
		if hasLEP && r.Version >= 16 {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = m.LeaderID, lep.Host, int32(lep.Port)
			resp.Brokers = append(resp.Brokers, b)
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
		if hasLEP && r.Version >= 1 {
			e := kmsg.NewFetchSnapshotResponseNodeEndpoint()
			e.NodeID, e.Host, e.Port = m.LeaderID, lep.Host, lep.Port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
		return resp
	case *kmsg.AddRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = m.Error, errorMessage(m)
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = m.Error, errorMessage(m)
		return resp
	case *kmsg.UpdateRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = m.Error
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = m.LeaderID, m.Epoch
		resp.CurrentLeader.Host, resp.CurrentLeader.Port = "", -1
		if hasLEP {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = lep.Host, int32(lep.Port)
		}
		return resp
	}
	return nil
}

// errorMessage is the response's ErrorMessage: the core's (handler
// errors, with Errors.message() as the default), null from request checks.
func errorMessage(m Message) *string { return m.ErrorMessage }

// observerSessionTimeoutMs: an observer that has not fetched for this long
// is no longer described (LeaderState.OBSERVER_SESSION_TIMEOUT_MS).
const observerSessionTimeoutMs = 300_000

// describeQuorum answers DescribeQuorum (v0-2) from the leader's view: the
// voters and observers with their directory ids (v2), and the voters'
// listeners as Nodes (v2).
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
		x.ReplicaID, x.ReplicaDirectoryID, x.LogEndOffset = rs.ReplicaID, rs.DirectoryID, rs.LogEndOffset
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
	for _, o := range st.Observers {
		if now-o.LastFetchTimestamp > observerSessionTimeoutMs && o.ReplicaID != n.cfg.NodeID {
			continue // gone: LeaderState.clearInactiveObservers
		}
		p.Observers = append(p.Observers, conv(o))
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if r.Version >= 2 {
		for _, v := range st.Voters {
			nd := kmsg.NewDescribeQuorumResponseNode()
			nd.NodeID = v.ReplicaID
			for _, e := range v.Endpoints {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
				nd.Listeners = append(nd.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, nd)
		}
	}
	return resp
}
