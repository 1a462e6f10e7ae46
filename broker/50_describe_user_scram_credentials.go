package broker

// DescribeUserScramCredentials: v0 (client and controller listeners)
//
// Behavior (ScramImage.describe, answered from the metadata image):
//   - No users (null or empty): every user with a SCRAM credential in the
//     image (UserScramCredentialRecords; kgo-broker's controller writes
//     none, so normally an empty answer).
//   - Named users: each user's mechanisms and iterations, RESOURCE_NOT_FOUND
//     "Attempt to describe a user credential that does not exist: <user>"
//     for a user without any, DUPLICATE_RESOURCE "Cannot describe SCRAM
//     credentials for the same user twice in a single request: <user>" for
//     a user named twice.
//   - Kafka's CONTROLLER listener lists the API but closes the connection
//     when asked; kgo-broker answers there as on a client listener.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(50, 0, 0, onBoth, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.ErrorMessage = strPtr("") // as Kafka's answer: empty, not null
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for _, c := range b.meta.Image().ScramCredentials() { // mechanism, then name order
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = c.Mechanism, c.Iterations
		byUser[c.Name] = append(byUser[c.Name], ci)
	}
	var users []string
	dup := map[string]bool{}
	if len(r.Users) == 0 {
		users = sortedKeys(byUser)
	} else {
		seen := map[string]bool{}
		for _, u := range r.Users {
			if seen[u.Name] {
				dup[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		switch infos, ok := byUser[u]; {
		case dup[u]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = strPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case !ok:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = strPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			res.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, res)
	}
	return protocol.Response{Msg: resp}, nil
}
