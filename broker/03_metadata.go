package broker

// Metadata: v0-13 (client listeners)
//
// Behavior:
//   - Answers from the broker's metadata image (metadatacache), never from the
//     controller: brokers are the unfenced brokers that have an endpoint for
//     the listener the request came in on; ControllerID is a live broker id
//     (a KRaft broker reports a random alive broker; we report ourselves when
//     alive, which keeps admin clients on a broker that forwards correctly).
//   - Topics null (v1+), or empty at v0, means all topics.
//   - Unknown topics are auto-created through the controller when
//     auto.create.topics.enable and AllowAutoTopicCreation (v4+) allow it, and
//     are answered LEADER_NOT_AVAILABLE while the creation is in flight, as
//     Kafka's AutoTopicCreationManager does; otherwise UNKNOWN_TOPIC_OR_PARTITION.
//   - Authorization (KafkaApis.handleTopicMetadataRequest): only topics with
//     DESCRIBE are listed for all topics; a requested topic without it
//     answers TOPIC_AUTHORIZATION_FAILED whether it exists or not (by id:
//     with the id, without the name); auto-creating a topic needs CREATE
//     on CLUSTER or on the topic (TOPIC_AUTHORIZATION_FAILED). Kafka lists
//     the refused topics after the others; kgo-broker keeps request order.
//   - Invalid names get INVALID_TOPIC_EXCEPTION; unknown topic ids (v12+)
//     UNKNOWN_TOPIC_ID.
//   - Partitions whose leader is -1 or not alive get LEADER_NOT_AVAILABLE;
//     replicas on fenced brokers are listed as offline.
//
// Version notes:
//   - v1: IsInternal, ControllerID, null topics; v2: ClusterID; v4: AllowAutoTopicCreation
//   - v5: OfflineReplicas; v7: LeaderEpoch; v8: authorized operations
//   - v9: flexible; v10: TopicID; v11: no cluster authorized operations
//   - v12: topic ids in the request; v13: top-level ErrorCode

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(3, 0, 13, onBroker, handleMetadata) }

func handleMetadata(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	resp, err := metadataAnswer(ctx, b, req)
	if err != nil || resp.Msg == nil {
		return resp, err
	}
	// KIP-430 authorized operations, asked for (v8+): the topics described
	// (not those refused) and, v8-10, the cluster.
	r := req.Msg.(*kmsg.MetadataRequest)
	m := resp.Msg.(*kmsg.MetadataResponse)
	if r.Version >= 8 && r.IncludeTopicAuthorizedOperations {
		for i := range m.Topics {
			if t := &m.Topics[i]; t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.AuthorizedOperations = b.authorizedOperations(req, resTopic, *t.Topic)
			}
		}
	}
	if r.Version >= 8 && r.Version <= 10 && r.IncludeClusterAuthorizedOperations {
		m.AuthorizedOperations = b.clusterAuthorizedOperations(req)
	}
	return resp, nil
}

func metadataAnswer(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	img := b.meta.Image()

	resp.Brokers = b.metadataBrokers(img, req.Listener)
	clusterID := b.clusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.liveControllerID(img)

	allTopics := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if allTopics {
		for _, name := range img.TopicNames() {
			if !b.authorize(req, opDescribe, resTopic, name) {
				continue // not disclosed
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(img, img.TopicByName(name), req.Listener))
		}
		return protocol.Response{Msg: resp}, nil
	}

	allowAuto := b.settings.autoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	var toCreate []string
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			// Lookup by topic id (v12+).
			t := img.TopicByID(rt.TopicID)
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if !b.authorize(req, opDescribe, resTopic, t.Name) {
				// Topic ids are not sensitive: the id is named.
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID, mt.ErrorCode = t.ID, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(img, t, req.Listener))
			continue
		}
		name := *rt.Topic
		if !b.authorize(req, opDescribe, resTopic, name) {
			// Whether it exists is not disclosed.
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = strPtr(name), kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t := img.TopicByName(name); t != nil {
			resp.Topics = append(resp.Topics, b.metadataTopic(img, t, req.Listener))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		switch {
		case validateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case allowAuto && !b.authorize(req, opCreate, resCluster, "kafka-cluster") && !b.authorize(req, opCreate, resTopic, name):
			mt.ErrorCode, mt.IsInternal = kerr.TopicAuthorizationFailed.Code, isInternalTopic(name)
		case allowAuto && !isInternalTopic(name):
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
			toCreate = append(toCreate, name)
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	if len(toCreate) > 0 {
		b.autoCreateTopics(toCreate)
	}
	return protocol.Response{Msg: resp}, nil
}

// metadataBrokers lists the live brokers with an endpoint on listener.
func (b *Broker) metadataBrokers(img *metadatacache.Image, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, br := range img.AliveBrokers() {
		ep, ok := br.Listener(listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = br.ID, ep.Host, int32(ep.Port), br.Rack
		out = append(out, mb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

// liveControllerID is the id admin clients send controller-bound requests
// to: this broker when it is alive, else the lowest alive broker, else -1.
func (b *Broker) liveControllerID(img *metadatacache.Image) int32 {
	alive := img.AliveBrokers()
	for _, br := range alive {
		if br.ID == b.nodeID {
			return b.nodeID
		}
	}
	if len(alive) > 0 {
		return alive[0].ID
	}
	return -1
}

func (b *Broker) metadataTopic(img *metadatacache.Image, t *metadatacache.Topic, listener string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	for _, p := range t.SortedPartitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = p.Replicas
		mp.ISR = p.Isr
		mp.OfflineReplicas = []int32{}
		for _, id := range p.Replicas {
			if br := img.Broker(id); br == nil || br.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, id)
			}
		}
		if br := img.Broker(p.Leader); p.Leader < 0 || br == nil || br.Fenced {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		} else if _, ok := br.Listener(listener); !ok {
			mp.ErrorCode = kerr.ListenerNotFound.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// autoCreateTopics asks the controller to create topics with the broker's
// defaults without waiting for the answer; the client's next Metadata
// request sees the result (AutoTopicCreationManager). A topic whose creation
// is already in flight is not asked for again (its inflightTopics): clients
// retry Metadata every few ms while a topic is being created.
func (b *Broker) autoCreateTopics(names []string) {
	names = b.autoCreating.claim(names)
	if len(names) == 0 {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(forwardTimeout.Milliseconds())
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = n
		t.NumPartitions = -1
		t.ReplicationFactor = -1
		req.Topics = append(req.Topics, t)
	}
	go func() {
		defer b.autoCreating.release(names)
		ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
		defer cancel()
		if _, err := b.forward.Request(ctx, req); err != nil {
			b.logger.Warn("auto topic creation failed", zap.Strings("topics", names), zap.Error(err))
		}
	}()
}

// inflightTopics is the set of topics whose auto-creation was sent to the
// controller and not answered yet.
type inflightTopics struct {
	mu    lockrank.Mutex // a leaf
	names map[string]struct{}
}

// claim marks the names not in flight as in flight and returns them.
func (f *inflightTopics) claim(names []string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.names == nil {
		f.names = map[string]struct{}{}
	}
	out := names[:0:0]
	for _, n := range names {
		if _, ok := f.names[n]; !ok {
			f.names[n] = struct{}{}
			out = append(out, n)
		}
	}
	return out
}

// release ends the flight of names (answered, failed or timed out).
func (f *inflightTopics) release(names []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		delete(f.names, n)
	}
}
