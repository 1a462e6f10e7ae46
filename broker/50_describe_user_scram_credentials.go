package broker

// DescribeUserScramCredentials: v0 (client listeners)
//
// Behavior (Kafka's ScramImage.describe, answered by the broker from its
// metadata image):
//   - No users (null or empty): every user with a credential, each with its
//     mechanisms and iterations (never the salt or keys).
//   - A named user without credentials: RESOURCE_NOT_FOUND "Attempt to
//     describe a user credential that does not exist: <user>".
//   - A user named twice: DUPLICATE_RESOURCE "Cannot describe SCRAM
//     credentials for the same user twice in a single request: <user>".
//
// kafka-configs.sh --describe --entity-type users uses it.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(50, 0, 0, onBroker, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for _, c := range b.meta.Image().ScramCredentials() {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = c.Mechanism, c.Iterations
		byUser[c.Name] = append(byUser[c.Name], ci)
	}
	type want struct {
		name string
		dup  bool
	}
	var users []want
	if len(r.Users) == 0 {
		for n := range byUser {
			users = append(users, want{name: n})
		}
		sort.Slice(users, func(i, j int) bool { return users[i].name < users[j].name })
	} else {
		idx := map[string]int{}
		for _, u := range r.Users {
			if i, ok := idx[u.Name]; ok {
				users[i].dup = true
				continue
			}
			idx[u.Name] = len(users)
			users = append(users, want{name: u.Name})
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u.name
		switch infos, ok := byUser[u.name]; {
		case u.dup:
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u.name
			res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, &msg
		case !ok:
			msg := "Attempt to describe a user credential that does not exist: " + u.name
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, &msg
		default:
			res.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, res)
	}
	return protocol.Response{Msg: resp}, nil
}
