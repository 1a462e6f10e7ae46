package broker

// DescribeCluster: v0-2 (client listeners)
//
// Behavior:
//   - Lists the live brokers that have an endpoint for the listener the
//     request came in on, the cluster id, and a live broker as ControllerID
//     (as a KRaft broker does: see Metadata).
//   - EndpointType (v1+) must be 1 (brokers) on a client listener; 2
//     (controllers) is answered MISMATCHED_ENDPOINT_TYPE as Kafka's broker
//     does (KIP-919: controllers are described through bootstrap.controllers).
//   - v2 IncludeFencedBrokers adds fenced brokers with IsFenced (KIP-1073).
//
// Version notes:
//   - v1: EndpointType; v2: IncludeFencedBrokers, Brokers[].IsFenced

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(60, 0, 2, onBroker, handleDescribeCluster) }

const (
	endpointTypeBroker     = 1
	endpointTypeController = 2
)

func handleDescribeCluster(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	if r.Version >= 1 && r.EndpointType != endpointTypeBroker {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		resp.ErrorMessage = &msg
		return protocol.Response{Msg: resp}, nil
	}
	img := b.meta.Image()
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.liveControllerID(img)
	for _, br := range img.Brokers() {
		if br.Fenced && !(r.Version >= 2 && r.IncludeFencedBrokers) {
			continue
		}
		ep, ok := br.Listener(req.Listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = br.ID, ep.Host, int32(ep.Port), br.Rack, br.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return protocol.Response{Msg: resp}, nil
}
