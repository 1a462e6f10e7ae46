package broker

// AlterUserScramCredentials: v0 (client and controller listeners)
//
// Behavior: SCRAM credentials (KIP-554) are not implemented: kgo-broker has
// no SASL listeners to check them and its controller writes no
// UserScramCredentialRecords. Each user named in the request (deletions
// first, then upsertions, each user once) answers UNSUPPORTED_VERSION
// "SCRAM credentials are not implemented by kgo-broker", so
// kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[...]' fails at once.
// A Kafka broker forwards the request to its controller, which stores them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(51, 0, 0, onBoth, handleAlterUserScramCredentials) }

func handleAlterUserScramCredentials(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, kerr.UnsupportedVersion.Code
		res.ErrorMessage = strPtr("SCRAM credentials are not implemented by kgo-broker")
		resp.Results = append(resp.Results, res)
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
	return protocol.Response{Msg: resp}, nil
}
