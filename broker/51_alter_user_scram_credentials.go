package broker

// AlterUserScramCredentials: v0 (client and controller listeners)
//
// Behavior (a Kafka broker forwards it to the controller;
// ScramControlManager.alterCredentials), one result per user named (its
// first change, sorted):
//   - Validated as Kafka validates: an empty user name answers
//     UNACCEPTABLE_CREDENTIAL "Username must not be empty", a mechanism other
//     than SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM
//     "Unknown SCRAM mechanism", fewer than 4096 or more than 16384
//     iterations UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many
//     iterations"; deleting a credential the metadata image does not hold
//     RESOURCE_NOT_FOUND "Attempt to delete a user credential that does not
//     exist".
//   - Storing or deleting a credential is not implemented (KIP-554: no
//     SASL/SCRAM listeners check them, the controller writes no
//     UserScramCredentialRecords): UNSUPPORTED_VERSION "SCRAM credentials are
//     not implemented by kgo-broker", so kafka-configs.sh --alter
//     --add-config 'SCRAM-SHA-256=[...]' fails at once.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(51, 0, 0, onBoth, handleAlterUserScramCredentials) }

// SCRAM iteration bounds (ScramMechanism: 4096 minimum, ScramFormatter's
// 16384 maximum).
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

func handleAlterUserScramCredentials(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	have := map[metadatacache.ScramKey]bool{}
	for _, c := range b.meta.Image().ScramCredentials() {
		have[metadatacache.ScramKey{Name: c.Name, Mechanism: c.Mechanism}] = true
	}
	type result struct {
		code int16
		msg  string
	}
	results := map[string]result{}
	var order []string
	set := func(user string, code int16, msg string) {
		if _, done := results[user]; !done {
			results[user] = result{code, msg}
			order = append(order, user)
		}
	}
	knownMechanism := func(m int8) bool { return m == 1 || m == 2 }
	for _, d := range r.Deletions {
		switch {
		case d.Name == "":
			set(d.Name, kerr.UnacceptableCredential.Code, "Username must not be empty")
		case !knownMechanism(d.Mechanism):
			set(d.Name, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
		case !have[metadatacache.ScramKey{Name: d.Name, Mechanism: d.Mechanism}]:
			set(d.Name, kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
		default:
			set(d.Name, kerr.UnsupportedVersion.Code, "SCRAM credentials are not implemented by kgo-broker")
		}
	}
	for _, u := range r.Upsertions {
		switch {
		case u.Name == "":
			set(u.Name, kerr.UnacceptableCredential.Code, "Username must not be empty")
		case !knownMechanism(u.Mechanism):
			set(u.Name, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
		case u.Iterations < scramMinIterations:
			set(u.Name, kerr.UnacceptableCredential.Code, "Too few iterations")
		case u.Iterations > scramMaxIterations:
			set(u.Name, kerr.UnacceptableCredential.Code, "Too many iterations")
		default:
			set(u.Name, kerr.UnsupportedVersion.Code, "SCRAM credentials are not implemented by kgo-broker")
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return strings.Compare(a, b) })
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = user, results[user].code
		res.ErrorMessage = strPtr(results[user].msg)
		resp.Results = append(resp.Results, res)
	}
	return protocol.Response{Msg: resp}, nil
}
