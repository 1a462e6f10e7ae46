package broker

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/sharecoord"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// sharePersister is the node's sharestate.Persister, Kafka's
// DefaultStatePersister with its PersisterStateManager: it splits a share
// state request by share coordinator, sends one RPC per coordinator node
// over the inter-broker clients (served by this node's own handlers when
// it is the coordinator), and merges the answers in the request's order.
//
//	request (group, [topic, [partition]])
//	  └─ per partition: sharestate.Key ─► __share_group_state partition ─► its leader (the image)
//	       └─ per leader: one RPC (83-87) ─► per partition answers
//	            └─ NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE
//	               or a transport error: found again and resent after a backoff
//
// Kafka asks FindCoordinator (key type 2) of a broker; a kgo-broker node
// knows the metadata image, so it finds the leader itself, and asks the
// share coordinator to create __share_group_state when the image lacks it.
// Retries back off exponentially (1 s doubling to 30 s, 20% jitter, 5
// attempts: PersisterStateManager's REQUEST_BACKOFF_MS,
// REQUEST_BACKOFF_MAX_MS, MAX_FIND_COORD_ATTEMPTS), within the context's
// deadline: a partition still failing answers its last error. It holds no
// lock: every call runs on its caller's goroutine and the goroutines it
// starts and waits for.
type sharePersister struct {
	nodeID int32
	image  func() *metadatacache.Image
	// send sends a share state request to a broker (brokerClients.Request).
	send      func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)
	coord     *sharecoord.Coordinator // creates __share_group_state; may be nil
	listener  string                  // the inter-broker listener: coordinators need an endpoint there
	versions  func(key int16) int16   // the version to send an API at
	logger    *zap.Logger
	partsConf int32 // share.coordinator.state.topic.num.partitions, before the topic exists

	backoff, maxBackoff time.Duration
	attempts            int
}

var _ sharestate.Persister = (*sharePersister)(nil)

func newSharePersister(b *Broker, logger *zap.Logger) *sharePersister {
	p := &sharePersister{nodeID: b.nodeID, image: b.meta.Image, coord: b.shareCoord, logger: logger,
		backoff: time.Second, maxBackoff: 30 * time.Second, attempts: 5, partsConf: 50}
	if b.cfg != nil {
		p.partsConf = b.cfg.Int("share.coordinator.state.topic.num.partitions")
		p.listener = b.cfg.InterBrokerListenerName
	}
	p.send = func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
		if b.peers == nil {
			return nil, errors.New("no inter-broker clients")
		}
		return b.peers.Request(ctx, node, req)
	}
	p.versions = func(key int16) int16 {
		if e, ok := registry(onBroker)[key]; ok {
			return e.max // every node runs this build
		}
		return 0
	}
	return p
}

// shareItem is one partition of a request; outcome its answer: the
// response partition (any of the five kmsg types), or an error.
type shareItem struct {
	topicID   [16]byte
	partition int32
}

type outcome struct {
	code int16
	msg  *string
	part any // the coordinator's response partition, when it answered
}

func (o outcome) retriable() bool {
	switch o.code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

func errOutcome(err *kerr.Error) outcome {
	msg := sharecoord.KafkaMessage(err)
	return outcome{code: err.Code, msg: &msg}
}

// sendFunc sends the request for items idx to node and returns the
// response partitions by item index; an error is a transport error.
type sendFunc func(ctx context.Context, node int32, idx []int) (map[int]outcome, error)

// coordinatorOf returns the leader of the key's __share_group_state
// partition, or a retriable error.
func (p *sharePersister) coordinatorOf(img *metadatacache.Image, key string) (int32, *kerr.Error) {
	t := img.TopicByName(sharecoord.TopicName)
	if t == nil || len(t.Partitions) == 0 {
		if p.coord != nil {
			p.coord.CreateTopic()
		}
		return -1, kerr.CoordinatorNotAvailable
	}
	part := t.Partition(sharecoord.PartitionFor(key, int32(len(t.Partitions))))
	if part == nil || part.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	br := img.Broker(part.Leader)
	if br == nil || br.Fenced {
		return -1, kerr.CoordinatorNotAvailable
	}
	if p.listener != "" && part.Leader != p.nodeID {
		if _, ok := br.Listener(p.listener); !ok {
			return -1, kerr.CoordinatorNotAvailable
		}
	}
	return part.Leader, nil
}

// route runs one round per attempt: every partition not yet answered is
// sent to its coordinator, the coordinators in parallel; retriable answers
// go again after the backoff. It returns the outcomes in items' order, or
// the context's error once it is done.
func (p *sharePersister) route(ctx context.Context, group string, items []shareItem, send sendFunc) ([]outcome, error) {
	out := make([]outcome, len(items))
	if group == "" {
		// DefaultStatePersister refuses the call (its validate); the
		// coordinator would answer an empty response.
		msg := "Group id must be specified and non-empty"
		for i := range out {
			out[i] = outcome{code: kerr.InvalidRequest.Code, msg: &msg}
		}
		return out, nil
	}
	pending := make([]int, len(items))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; ; attempt++ {
		img := p.image()
		byNode := map[int32][]int{}
		for _, i := range pending {
			node, err := p.coordinatorOf(img, sharestate.Key(group, items[i].topicID, items[i].partition))
			if err != nil {
				out[i] = errOutcome(err)
				continue
			}
			byNode[node] = append(byNode[node], i)
		}
		// Each sender writes the outcomes of its own items only.
		var wg sync.WaitGroup
		for node, idx := range byNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := send(ctx, node, idx)
				for _, i := range idx {
					switch o, ok := got[i]; {
					case err != nil:
						// Kafka retries a disconnected coordinator as one
						// that is not available.
						out[i] = errOutcome(kerr.CoordinatorNotAvailable)
					case !ok:
						out[i] = errOutcome(kerr.UnknownServerError)
					default:
						out[i] = o
					}
				}
				if err != nil && ctx.Err() == nil {
					p.logger.Debug("share state request failed", zap.Int32("coordinator", node), zap.Error(err))
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var again []int
		for _, i := range pending {
			if out[i].retriable() {
				again = append(again, i)
			}
		}
		if len(again) == 0 || attempt >= p.attempts {
			return out, nil
		}
		wait := p.backoffFor(attempt)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return out, nil // no time for another round: answer what we have
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		pending = again
	}
}

// backoffFor is ExponentialBackoff(REQUEST_BACKOFF_MS, 2,
// REQUEST_BACKOFF_MAX_MS, 0.2) after attempt attempts.
func (p *sharePersister) backoffFor(attempt int) time.Duration {
	d := p.backoff
	for i := 1; i < attempt && d < p.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.maxBackoff)
	jitter := 1 + 0.2*(2*rand.Float64()-1)
	return time.Duration(float64(d) * jitter)
}

// sendAs sends req (its version set to the highest served) and type-checks
// the response.
func sendAs[Resp kmsg.Response](ctx context.Context, p *sharePersister, node int32, req kmsg.Request) (Resp, error) {
	var zero Resp
	req.SetVersion(p.versions(req.Key()))
	resp, err := p.send(ctx, node, req)
	if err != nil {
		return zero, err
	}
	r, ok := resp.(Resp)
	if !ok {
		return zero, errors.New("unexpected response to " + kmsg.NameForKey(req.Key()))
	}
	return r, nil
}

// byItem finds the response partition of each item sent: idx lists the
// items in request order.
func byItem(items []shareItem, idx []int, each func(visit func(topicID [16]byte, partition int32, o outcome))) map[int]outcome {
	pos := map[shareItem]int{}
	for _, i := range idx {
		pos[items[i]] = i
	}
	got := map[int]outcome{}
	each(func(topicID [16]byte, partition int32, o outcome) {
		if i, ok := pos[shareItem{topicID, partition}]; ok {
			got[i] = o
		}
	})
	return got
}

// InitializeState implements sharestate.Persister.
func (p *sharePersister) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	var items []shareItem
	var parts []kmsg.InitializeShareGroupStateRequestTopicPartition
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			items = append(items, shareItem{t.TopicID, pt.Partition})
			parts = append(parts, pt)
		}
	}
	outs, err := p.route(ctx, req.GroupID, items, func(ctx context.Context, node int32, idx []int) (map[int]outcome, error) {
		sub := kmsg.NewPtrInitializeShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, i := range idx {
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].TopicID != items[i].topicID {
				t := kmsg.NewInitializeShareGroupStateRequestTopic()
				t.TopicID = items[i].topicID
				sub.Topics = append(sub.Topics, t)
			}
			sub.Topics[len(sub.Topics)-1].Partitions = append(sub.Topics[len(sub.Topics)-1].Partitions, parts[i])
		}
		resp, err := sendAs[*kmsg.InitializeShareGroupStateResponse](ctx, p, node, sub)
		if err != nil {
			return nil, err
		}
		return byItem(items, idx, func(visit func([16]byte, int32, outcome)) {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					visit(t.TopicID, rp.Partition, outcome{code: rp.ErrorCode, msg: rp.ErrorMessage, part: rp})
				}
			}
		}), nil
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp, ok := outs[i].part.(kmsg.InitializeShareGroupStateResponseTopicPartition)
			if !ok {
				rp = kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = pt.Partition, outs[i].code, outs[i].msg
			}
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// ReadState implements sharestate.Persister.
func (p *sharePersister) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	var items []shareItem
	var parts []kmsg.ReadShareGroupStateRequestTopicPartition
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			items = append(items, shareItem{t.TopicID, pt.Partition})
			parts = append(parts, pt)
		}
	}
	outs, err := p.route(ctx, req.GroupID, items, func(ctx context.Context, node int32, idx []int) (map[int]outcome, error) {
		sub := kmsg.NewPtrReadShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, i := range idx {
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].TopicID != items[i].topicID {
				t := kmsg.NewReadShareGroupStateRequestTopic()
				t.TopicID = items[i].topicID
				sub.Topics = append(sub.Topics, t)
			}
			sub.Topics[len(sub.Topics)-1].Partitions = append(sub.Topics[len(sub.Topics)-1].Partitions, parts[i])
		}
		resp, err := sendAs[*kmsg.ReadShareGroupStateResponse](ctx, p, node, sub)
		if err != nil {
			return nil, err
		}
		return byItem(items, idx, func(visit func([16]byte, int32, outcome)) {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					visit(t.TopicID, rp.Partition, outcome{code: rp.ErrorCode, msg: rp.ErrorMessage, part: rp})
				}
			}
		}), nil
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp, ok := outs[i].part.(kmsg.ReadShareGroupStateResponseTopicPartition)
			if !ok {
				rp = kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage, rp.StartOffset = pt.Partition, outs[i].code, outs[i].msg, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// WriteState implements sharestate.Persister.
func (p *sharePersister) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	var items []shareItem
	var parts []kmsg.WriteShareGroupStateRequestTopicPartition
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			items = append(items, shareItem{t.TopicID, pt.Partition})
			parts = append(parts, pt)
		}
	}
	outs, err := p.route(ctx, req.GroupID, items, func(ctx context.Context, node int32, idx []int) (map[int]outcome, error) {
		sub := kmsg.NewPtrWriteShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, i := range idx {
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].TopicID != items[i].topicID {
				t := kmsg.NewWriteShareGroupStateRequestTopic()
				t.TopicID = items[i].topicID
				sub.Topics = append(sub.Topics, t)
			}
			sub.Topics[len(sub.Topics)-1].Partitions = append(sub.Topics[len(sub.Topics)-1].Partitions, parts[i])
		}
		resp, err := sendAs[*kmsg.WriteShareGroupStateResponse](ctx, p, node, sub)
		if err != nil {
			return nil, err
		}
		return byItem(items, idx, func(visit func([16]byte, int32, outcome)) {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					visit(t.TopicID, rp.Partition, outcome{code: rp.ErrorCode, msg: rp.ErrorMessage, part: rp})
				}
			}
		}), nil
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp, ok := outs[i].part.(kmsg.WriteShareGroupStateResponseTopicPartition)
			if !ok {
				rp = kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = pt.Partition, outs[i].code, outs[i].msg
			}
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// DeleteState implements sharestate.Persister.
func (p *sharePersister) DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	var items []shareItem
	var parts []kmsg.DeleteShareGroupStateRequestTopicPartition
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			items = append(items, shareItem{t.TopicID, pt.Partition})
			parts = append(parts, pt)
		}
	}
	outs, err := p.route(ctx, req.GroupID, items, func(ctx context.Context, node int32, idx []int) (map[int]outcome, error) {
		sub := kmsg.NewPtrDeleteShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, i := range idx {
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].TopicID != items[i].topicID {
				t := kmsg.NewDeleteShareGroupStateRequestTopic()
				t.TopicID = items[i].topicID
				sub.Topics = append(sub.Topics, t)
			}
			sub.Topics[len(sub.Topics)-1].Partitions = append(sub.Topics[len(sub.Topics)-1].Partitions, parts[i])
		}
		resp, err := sendAs[*kmsg.DeleteShareGroupStateResponse](ctx, p, node, sub)
		if err != nil {
			return nil, err
		}
		return byItem(items, idx, func(visit func([16]byte, int32, outcome)) {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					visit(t.TopicID, rp.Partition, outcome{code: rp.ErrorCode, msg: rp.ErrorMessage, part: rp})
				}
			}
		}), nil
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp, ok := outs[i].part.(kmsg.DeleteShareGroupStateResponseTopicPartition)
			if !ok {
				rp = kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = pt.Partition, outs[i].code, outs[i].msg
			}
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// ReadStateSummary implements sharestate.Persister.
func (p *sharePersister) ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	var items []shareItem
	var parts []kmsg.ReadShareGroupStateSummaryRequestTopicPartition
	for _, t := range req.Topics {
		for _, pt := range t.Partitions {
			items = append(items, shareItem{t.TopicID, pt.Partition})
			parts = append(parts, pt)
		}
	}
	outs, err := p.route(ctx, req.GroupID, items, func(ctx context.Context, node int32, idx []int) (map[int]outcome, error) {
		sub := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		sub.GroupID = req.GroupID
		for _, i := range idx {
			if n := len(sub.Topics); n == 0 || sub.Topics[n-1].TopicID != items[i].topicID {
				t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
				t.TopicID = items[i].topicID
				sub.Topics = append(sub.Topics, t)
			}
			sub.Topics[len(sub.Topics)-1].Partitions = append(sub.Topics[len(sub.Topics)-1].Partitions, parts[i])
		}
		resp, err := sendAs[*kmsg.ReadShareGroupStateSummaryResponse](ctx, p, node, sub)
		if err != nil {
			return nil, err
		}
		return byItem(items, idx, func(visit func([16]byte, int32, outcome)) {
			for _, t := range resp.Topics {
				for _, rp := range t.Partitions {
					visit(t.TopicID, rp.Partition, outcome{code: rp.ErrorCode, msg: rp.ErrorMessage, part: rp})
				}
			}
		}), nil
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp, ok := outs[i].part.(kmsg.ReadShareGroupStateSummaryResponseTopicPartition)
			if !ok {
				rp = kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage, rp.StartOffset = pt.Partition, outs[i].code, outs[i].msg, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
