package broker

// IncrementalAlterConfigs: v0-1 (client listeners)
//
// Behavior (KafkaApis.handleIncrementalAlterConfigsRequest):
//   - Preprocessed on the broker (ConfigAdminManager.preprocess): a
//     resource that appears more than once gets INVALID_REQUEST "Each
//     resource must appear at most once." on every copy; BROKER_LOGGER
//     resources (KIP-412, broker_loggers.go) are checked and applied here:
//     ALTER_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED), the
//     name this node's id, SET and DELETE only, known loggers and Kafka's
//     level names; validate_only checks without applying. BROKER
//     resources (KIP-226) are validated here too (config_admin.go: this
//     node's id or "" for the cluster-wide default, the image's configs
//     with the operations applied through DynamicBrokerConfig.validate),
//     and forwarded only when they pass; validate_only does not skip that.
//     Other resource types than TOPIC, BROKER, BROKER_LOGGER, GROUP and
//     CLIENT_METRICS get INVALID_REQUEST "Unknown resource type N".
//   - The rest is forwarded to the active controller (forward_apis.go),
//     which validates and writes the ConfigRecords; its answers follow the
//     preprocessed ones. With nothing left to forward the broker answers
//     alone.
//
// Version notes: v1: flexible.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(44, 0, 1, onBroker, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	repeated := repeatedResources(len(r.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return r.Resources[i].ResourceType, r.Resources[i].ResourceName
	})
	var rest []kmsg.IncrementalAlterConfigsRequestResource
	for i := range r.Resources {
		rs := &r.Resources[i]
		switch {
		case repeated[i]:
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
			rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, strPtr(errRepeatedResource)
			resp.Resources = append(resp.Resources, rr)
		case rs.ResourceType == kmsg.ConfigResourceTypeBrokerLogger:
			resp.Resources = append(resp.Resources, b.brokerLoggerResult(req, r.ValidateOnly, rs))
		case rs.ResourceType == kmsg.ConfigResourceTypeBroker:
			if e := b.preprocessIncrementalBroker(rs); e != nil {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
				rr.ErrorCode, rr.ErrorMessage = e.code.Code, strPtr(e.msg)
				resp.Resources = append(resp.Resources, rr)
				continue
			}
			rest = append(rest, *rs)
		case rs.ResourceType == kmsg.ConfigResourceTypeTopic, rs.ResourceType == kmsg.ConfigResourceTypeGroupConfig,
			rs.ResourceType == kmsg.ConfigResourceTypeClientMetrics:
			rest = append(rest, *rs)
		default:
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
			rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, strPtr("Unknown resource type "+strconv.Itoa(int(rs.ResourceType)))
			resp.Resources = append(resp.Resources, rr)
		}
	}
	if len(rest) == 0 {
		return protocol.Response{Msg: resp}, nil
	}
	fwd := *r
	fwd.Resources = rest
	freq := *req
	freq.Msg = &fwd
	fresp, err := handleForwarded(ctx, b, &freq)
	if err != nil || fresp.Msg == nil {
		return fresp, err
	}
	out := fresp.Msg.(*kmsg.IncrementalAlterConfigsResponse)
	out.Resources = append(resp.Resources, out.Resources...)
	return fresp, nil
}
