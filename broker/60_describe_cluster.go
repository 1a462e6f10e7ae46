package broker

// DescribeCluster: v0-2 (client listeners and the CONTROLLER listener)
//
// Behavior on the CONTROLLER listener (ControllerApis.handleDescribeCluster,
// KIP-919, what admin clients with bootstrap.controllers send): EndpointType
// must be 2 (controllers), else MISMATCHED_ENDPOINT_TYPE; below
// metadata.version 3.7-IV0 it is UNSUPPORTED_VERSION ("Direct-to-controller
// communication is not supported with the current MetadataVersion."). The
// answer lists the registered controllers (ControllerRegistration, KIP-919;
// ControllerRegistrationsPublisher.describeClusterControllers) at their
// endpoint for the listener the request came in on, and the raft leader as
// ControllerID (-1 while there is none). A voter of controller.quorum.voters
// that has not registered yet is listed at its configured address, so
// admin clients with bootstrap.controllers find every voter right after a
// start (Kafka lists only the registered ones).
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
	"github.com/kgo-broker/kgo-broker/metadatacache"
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
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOperations(req)
	}
	return protocol.Response{Msg: resp}, nil
}

// describeControllers answers DescribeCluster on the CONTROLLER listener
// from the node's image: the registered controllers with an endpoint named
// listener, then any voter not registered at its configured address.
func describeControllers(r *kmsg.DescribeClusterRequest, clusterID, listener string, leader int32, img *metadatacache.Image, voters map[int32]config.HostPort) *kmsg.DescribeClusterResponse {
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeController
	if r.EndpointType != endpointTypeController {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
		resp.ErrorMessage = &msg
		return resp
	}
	if mv := img.MetadataVersion(); mv > 0 && mv < metadatacache.MV3_7_IV0 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		msg := "Direct-to-controller communication is not supported with the current MetadataVersion."
		resp.ErrorMessage = &msg
		return resp
	}
	resp.ClusterID = clusterID
	resp.ControllerID = leader
	listed := map[int32]bool{}
	for _, c := range img.Controllers() {
		for _, ep := range c.Listeners {
			if ep.Name != listener {
				continue
			}
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.NodeID, rb.Host, rb.Port = c.ID, ep.Host, int32(ep.Port)
			resp.Brokers = append(resp.Brokers, rb)
			listed[c.ID] = true
		}
	}
	for id, hp := range voters {
		if listed[id] {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = id, hp.Host, hp.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return resp
}
