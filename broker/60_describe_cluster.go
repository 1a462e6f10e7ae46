package broker

// DescribeCluster: v0-2 (client listeners and the CONTROLLER listener)
//
// Behavior on the CONTROLLER listener (ControllerApis.handleDescribeCluster,
// KIP-919, what admin clients with bootstrap.controllers send): EndpointType
// must be 2 (controllers), else MISMATCHED_ENDPOINT_TYPE; the answer lists
// the voters of controller.quorum.voters at their CONTROLLER endpoints (a
// static quorum: no controller registrations) and the raft leader as
// ControllerID (-1 while there is none).
//
// Behavior on client listeners:
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

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() {
	regKey(60, 0, 2, onBroker, handleDescribeCluster)
	regKey(60, 0, 2, onController, handleControllerAPI) // the node's describeControllers
}

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

// describeControllers answers DescribeCluster on the CONTROLLER listener:
// the voters at their CONTROLLER endpoints, the raft leader as ControllerID.
func describeControllers(r *kmsg.DescribeClusterRequest, clusterID string, leader int32, voters map[int32]config.HostPort) *kmsg.DescribeClusterResponse {
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeController
	if r.EndpointType != endpointTypeController {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
		resp.ErrorMessage = &msg
		return resp
	}
	resp.ClusterID = clusterID
	resp.ControllerID = leader
	for id, hp := range voters {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = id, hp.Host, hp.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return resp
}
