package broker

// AlterConfigs: v0-2 (client listeners)
//
// Behavior (KafkaApis.handleAlterConfigsRequest): preprocessed on the
// broker (ConfigAdminManager.preprocess for AlterConfigsRequestData): a
// resource that appears more than once gets INVALID_REQUEST "Each resource
// must appear at most once." on every copy; a BROKER resource is validated
// here (config_admin.go: this node's id or "", DynamicBrokerConfig
// .validate of its new configs); BROKER_LOGGER and unknown resource types
// get INVALID_REQUEST "Unknown resource type N" (legacy AlterConfigs has no
// BROKER_LOGGER). The rest is forwarded to the active controller
// (forward_apis.go), which persists it; its answers follow the
// preprocessed ones.
//
// Version notes: v2: flexible.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(33, 0, 2, onBroker, handleAlterConfigs) }

func handleAlterConfigs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	repeated := repeatedResources(len(r.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return r.Resources[i].ResourceType, r.Resources[i].ResourceName
	})
	var rest []kmsg.AlterConfigsRequestResource
	for i := range r.Resources {
		rs := &r.Resources[i]
		var e *apiError
		switch {
		case repeated[i]:
			e = &apiError{kerr.InvalidRequest, errRepeatedResource}
		case rs.ResourceType == kmsg.ConfigResourceTypeBroker:
			e = b.preprocessLegacyBroker(rs)
		case rs.ResourceType == kmsg.ConfigResourceTypeTopic, rs.ResourceType == kmsg.ConfigResourceTypeGroupConfig,
			rs.ResourceType == kmsg.ConfigResourceTypeClientMetrics:
		default:
			e = &apiError{kerr.InvalidRequest, "Unknown resource type " + strconv.Itoa(int(rs.ResourceType))}
		}
		if e == nil {
			rest = append(rest, *rs)
			continue
		}
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		rr.ErrorCode, rr.ErrorMessage = e.code.Code, strPtr(e.msg)
		resp.Resources = append(resp.Resources, rr)
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
	out := fresp.Msg.(*kmsg.AlterConfigsResponse)
	out.Resources = append(resp.Resources, out.Resources...)
	return fresp, nil
}
