package broker

// Envelope (58) v0, served only on the CONTROLLER listener (Kafka 4.4's
// ControllerApis.handleEnvelopeRequest, EnvelopeUtils and
// RequestChannel.Request.buildResponseSend; KIP-590).
//
// A broker forwards a client's admin request to the active controller inside
// an Envelope: RequestData is the client's request header and body at the
// client's version, RequestPrincipal the client's principal serialized as
// DefaultPrincipalData (version-prefixed), ClientHostAddress the client's IP
// (4 or 16 bytes). The controller runs the embedded request as if the client
// had sent it (its header, principal and address; the envelope's listener)
// and answers an Envelope whose ResponseData is the embedded response header
// (the client's correlation id) and body at the client's version.
//
// Checked in Kafka's order, each failure answering an Envelope with no
// ResponseData and the error code:
//
//	principal not DefaultPrincipalData v0        PRINCIPAL_DESERIALIZATION_FAILURE
//	client address not 4 or 16 bytes             INVALID_REQUEST
//	embedded header unparseable or unknown key   UNSUPPORTED_VERSION
//	embedded API not forwardable (ApiKeys)        INVALID_REQUEST
//	embedded version not served, body malformed  UNSUPPORTED_VERSION
//	embedded response has NOT_CONTROLLER         NOT_CONTROLLER (DescribeQuorum:
//	                                             NOT_LEADER_OR_FOLLOWER), so the
//	                                             forwarding broker retries on the
//	                                             new controller
//
// An embedded request whose handler fails (a Go error: what would close a
// client's connection) is answered with the embedded API's error response
// carrying UNKNOWN_SERVER_ERROR, as Kafka's handleError does for the
// forwarded request.
//
// Authorization (with authorizer.class.name set): CLUSTER_ACTION on CLUSTER
// for the envelope's own principal (the forwarding broker), else
// CLUSTER_AUTHORIZATION_FAILED in the Envelope; the embedded request is then
// authorized as the client: the forwarded principal (the client's
// authenticated one, as the forwarding broker serialized it) is the
// embedded request's Principal and the client address its RemoteAddr
// (controller_authz.go); both are in its context too (forwardedFrom).

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() {
	regKey(58, 0, 0, onController, handleEnvelope)
}

// forwardableKeys are the APIs whose ApiKeys entry has forwardable=true in
// Kafka 4.4: what a broker sends to the controller in an Envelope, and all
// that a controller accepts inside one.
var forwardableKeys = map[int16]bool{
	19: true, // CreateTopics
	20: true, // DeleteTopics
	30: true, // CreateAcls
	31: true, // DeleteAcls
	33: true, // AlterConfigs
	37: true, // CreatePartitions
	38: true, // CreateDelegationToken
	39: true, // RenewDelegationToken
	40: true, // ExpireDelegationToken
	43: true, // ElectLeaders
	44: true, // IncrementalAlterConfigs
	45: true, // AlterPartitionReassignments
	46: true, // ListPartitionReassignments
	49: true, // AlterClientQuotas
	51: true, // AlterUserScramCredentials
	55: true, // DescribeQuorum
	57: true, // UpdateFeatures
	64: true, // UnregisterBroker
	67: true, // AllocateProducerIds
	80: true, // AddRaftVoter
	81: true, // RemoveRaftVoter
	94: true, // UnregisterController (KIP-1223)
}

// Forwarded is what a controller knows of the client behind an Envelope
// (Kafka's RequestContext of the forwarded request).
type Forwarded struct {
	// Principal is the client's principal as the forwarding broker saw it.
	Principal kmsg.DefaultPrincipalData
	// ClientAddress is the client's IP address.
	ClientAddress net.IP
	// Envelope is the Envelope request itself (the forwarding broker's
	// connection and header).
	Envelope *protocol.Request
}

type forwardedKey struct{}

// forwardedFrom returns the forwarded client of a request that arrived in an
// Envelope, or nil.
func forwardedFrom(ctx context.Context) *Forwarded {
	f, _ := ctx.Value(forwardedKey{}).(*Forwarded)
	return f
}

func handleEnvelope(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.EnvelopeRequest)
	resp := r.ResponseKind().(*kmsg.EnvelopeResponse)
	fail := func(e *kerr.Error, why string) (protocol.Response, error) {
		b.logger.Debug("envelope refused", zap.String("reason", why), zap.Stringer("remote", req.RemoteAddr), zap.Error(e))
		resp.ErrorCode = e.Code
		return protocol.Response{Msg: resp}, nil
	}
	// ControllerApis.handleEnvelopeRequest: the forwarding broker's own
	// principal needs CLUSTER_ACTION before anything is unwrapped.
	if !b.authorizeCluster(req, opClusterAction) {
		return fail(kerr.ClusterAuthorizationFailed, "Principal "+req.Principal.String()+" does not have required CLUSTER_ACTION for envelope")
	}
	principal, err := decodePrincipal(r.RequestPrincipal)
	if err != nil {
		return fail(kerr.PrincipalDeserializationFailure, "Failed to deserialize client principal from envelope: "+err.Error())
	}
	if n := len(r.ClientHostAddress); n != net.IPv4len && n != net.IPv6len {
		return fail(kerr.InvalidRequest, "Failed to parse client address from envelope")
	}
	client := net.IP(append([]byte(nil), r.ClientHostAddress...))
	key, ok := embeddedKey(r.RequestData)
	if !ok {
		return fail(kerr.UnsupportedVersion, "Failed to parse request header from envelope")
	}
	if !forwardableKeys[key] {
		return fail(kerr.InvalidRequest, fmt.Sprintf("API %s is not enabled or is not eligible for forwarding", kmsg.NameForKey(key)))
	}
	inner, err := protocol.DecodeRequest(r.RequestData, versionTable(onController))
	if err != nil {
		return fail(kerr.UnsupportedVersion, "Failed to parse forwarded request: "+err.Error())
	}
	inner.Listener = req.Listener
	inner.RemoteAddr = &net.TCPAddr{IP: client}
	// The embedded request runs as the client that sent it to the
	// broker (RequestContext with the forwarded principal), not as the
	// broker that forwarded it.
	inner.Principal = protocol.Principal{Type: principal.Type, Name: principal.Name, TokenAuthenticated: principal.TokenAuthenticated}
	fctx := context.WithValue(ctx, forwardedKey{}, &Forwarded{Principal: principal, ClientAddress: client, Envelope: req})

	e := controllerAPIs[inner.Key] // DecodeRequest served it, so it is registered
	out, herr := e.handle(fctx, b, inner)
	var msg kmsg.Response
	switch {
	case herr != nil:
		b.logger.Warn("forwarded request failed", zap.String("api", kmsg.NameForKey(inner.Key)), zap.Int16("version", inner.Version), zap.Error(herr))
		msg = errorResponse(inner.Msg, kerr.UnknownServerError.Code)
	case out.Msg == nil:
		return protocol.Response{}, fmt.Errorf("envelope: %s answered without a message", kmsg.NameForKey(inner.Key))
	default:
		msg = out.Msg
	}
	msg.SetVersion(inner.Version)
	if forwardedNotController(msg) {
		resp.ErrorCode = kerr.NotController.Code
		return protocol.Response{Msg: resp}, nil
	}
	resp.ResponseData = appendResponseWithHeader(nil, inner.Key, inner.CorrelationID, msg)
	return protocol.Response{Msg: resp}, nil
}

// decodePrincipal is DefaultKafkaPrincipalBuilder.deserialize: a
// version-prefixed DefaultPrincipalData of version 0.
func decodePrincipal(b []byte) (kmsg.DefaultPrincipalData, error) {
	var p kmsg.DefaultPrincipalData
	if len(b) < 2 {
		return p, errors.New("no principal")
	}
	if v := int16(b[0])<<8 | int16(b[1]); v != 0 {
		return p, fmt.Errorf("principal data version %d is not supported", v)
	}
	if err := p.ReadFrom(b); err != nil {
		return p, err
	}
	return p, nil
}

// embeddedKey reads the API key of an embedded request header, reporting
// false when there is no header or kmsg does not know the key (Kafka's
// RequestHeader.parse failing).
func embeddedKey(data []byte) (int16, bool) {
	if len(data) < 8 {
		return 0, false
	}
	key := int16(data[0])<<8 | int16(data[1])
	return key, kmsg.RequestForKey(key) != nil
}

// forwardedNotController is RequestChannel.Request.shouldReturnNotController:
// the embedded response names NOT_CONTROLLER (DescribeQuorum:
// NOT_LEADER_OR_FOLLOWER).
func forwardedNotController(resp kmsg.Response) bool {
	if r, ok := resp.(*kmsg.DescribeQuorumResponse); ok {
		if r.ErrorCode == kerr.NotLeaderForPartition.Code {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
		return false
	}
	return notController(resp)
}

// appendRequestWithHeader appends a request header (v1, or v2 when the
// version is flexible) and body, the layout of Envelope RequestData.
func appendRequestWithHeader(dst []byte, req kmsg.Request, correlationID int32, clientID string) []byte {
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, correlationID)
	dst = kbin.AppendNullableString(dst, &clientID)
	if req.IsFlexible() {
		dst = append(dst, 0) // no header tags
	}
	return req.AppendTo(dst)
}

// appendResponseWithHeader appends a response header (v0, or v1 when the
// response is flexible; ApiVersions always v0) and body, the layout of
// Envelope ResponseData (RequestContext.buildResponseEnvelopePayload).
func appendResponseWithHeader(dst []byte, key int16, correlationID int32, resp kmsg.Response) []byte {
	dst = kbin.AppendInt32(dst, correlationID)
	if resp.IsFlexible() && key != 18 {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}

// readResponseWithHeader decodes Envelope ResponseData into resp, whose
// version is set (AbstractResponse.parseResponse with the request header):
// the correlation id must be the request's.
func readResponseWithHeader(data []byte, key int16, correlationID int32, resp kmsg.Response) error {
	b := kbin.Reader{Src: data}
	if corr := b.Int32(); corr != correlationID {
		if err := b.Complete(); err != nil {
			return err
		}
		return fmt.Errorf("correlation id %d does not match the request's %d", corr, correlationID)
	}
	if resp.IsFlexible() && key != 18 {
		kmsg.SkipTags(&b)
	}
	if err := b.Complete(); err != nil {
		return err
	}
	return resp.ReadFrom(b.Src)
}
