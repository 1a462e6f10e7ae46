package controller

// AlterUserScramCredentials (51), as Kafka's ScramControlManager.alterCredentials:
// each user is altered at most once per request (DUPLICATE_RESOURCE
// otherwise), the mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512
// (UNSUPPORTED_SASL_MECHANISM), the user name non-empty and the iterations
// 4096..16384 (UNACCEPTABLE_CREDENTIAL), a deletion must name an existing
// credential (RESOURCE_NOT_FOUND), and metadata.version must be 3.5-IV2 or
// later (UNSUPPORTED_VERSION). The client sends the salted password; the
// controller derives StoredKey and ServerKey and writes
// UserScramCredentialRecord / RemoveUserScramCredentialRecord, atomically.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/security"
)

type scramKey struct {
	name      string
	mechanism int8
}

// mvScram is metadata.version 3.5-IV2, the first with SCRAM records.
const mvScram = 11

func scramErrorResponse(r *kmsg.AlterUserSCRAMCredentialsRequest, code int16) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User, rr.ErrorCode = name, code
		resp.Results = append(resp.Results, rr)
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
	return resp
}

func validateScramName(name string, mechanism int8) *apiError {
	if name == "" {
		return newAPIError(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if _, ok := security.ScramMechanismByType(mechanism); !ok {
		return newAPIError(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}

func (c *Controller) alterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	userErr := map[string]*apiError{}
	var errOrder []string
	setErr := func(name string, e *apiError) {
		if _, ok := userErr[name]; !ok {
			errOrder = append(errOrder, name)
		}
		userErr[name] = e
	}
	dels := map[string]kmsg.AlterUserSCRAMCredentialsRequestDeletion{}
	ups := map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}
	var order []string
	var mv int16
	existing := map[scramKey]bool{}
	c.view(func(s *state) {
		mv = s.metadataVersion()
		for k := range s.scram {
			existing[k] = true
		}
	})
	dup := newAPIError(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	for _, d := range req.Deletions {
		if _, failed := userErr[d.Name]; failed {
			continue
		}
		if _, twice := dels[d.Name]; twice {
			delete(dels, d.Name)
			setErr(d.Name, dup)
			continue
		}
		switch {
		case mv < mvScram:
			setErr(d.Name, newAPIError(kerr.UnsupportedVersion, "The current metadata.version does not support SCRAM"))
		case validateScramName(d.Name, d.Mechanism) != nil:
			setErr(d.Name, validateScramName(d.Name, d.Mechanism))
		case !existing[scramKey{d.Name, d.Mechanism}]:
			setErr(d.Name, newAPIError(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"))
		default:
			dels[d.Name] = d
			order = append(order, d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if _, failed := userErr[u.Name]; failed {
			continue
		}
		_, d := dels[u.Name]
		_, p := ups[u.Name]
		if d || p {
			delete(dels, u.Name)
			delete(ups, u.Name)
			setErr(u.Name, dup)
			continue
		}
		switch {
		case mv < mvScram:
			setErr(u.Name, newAPIError(kerr.UnsupportedVersion, "The current metadata.version does not support SCRAM"))
		case validateScramName(u.Name, u.Mechanism) != nil:
			setErr(u.Name, validateScramName(u.Name, u.Mechanism))
		case u.Iterations < security.ScramSHA256.MinIterations:
			setErr(u.Name, newAPIError(kerr.UnacceptableCredential, "Too few iterations"))
		case u.Iterations > security.MaxScramIterations:
			setErr(u.Name, newAPIError(kerr.UnacceptableCredential, "Too many iterations"))
		default:
			ups[u.Name] = u
			order = append(order, u.Name)
		}
	}
	var recs []metadatacache.Record
	var okUsers []string
	for _, name := range order {
		if d, ok := dels[name]; ok {
			r := metadatacache.NewRemoveUserScramCredentialRecord()
			r.SetVersion(0)
			r.Name, r.Mechanism = d.Name, d.Mechanism
			recs = append(recs, r)
			okUsers = append(okUsers, name)
		} else if u, ok := ups[name]; ok {
			m, _ := security.ScramMechanismByType(u.Mechanism)
			cred := m.CredentialFromSaltedPassword(u.SaltedPassword, u.Salt, u.Iterations)
			r := metadatacache.NewUserScramCredentialRecord()
			r.SetVersion(0)
			r.Name, r.Mechanism, r.Salt, r.StoredKey, r.ServerKey, r.Iterations = u.Name, u.Mechanism, cred.Salt, cred.StoredKey, cred.ServerKey, cred.Iterations
			recs = append(recs, r)
			okUsers = append(okUsers, name)
		}
	}
	if len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			return scramErrorResponse(req, kerr.NotController.Code)
		}
	}
	for _, name := range okUsers {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = name
		resp.Results = append(resp.Results, rr)
	}
	for _, name := range errOrder {
		e := userErr[name]
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User, rr.ErrorCode, rr.ErrorMessage = name, e.code(), e.message()
		resp.Results = append(resp.Results, rr)
	}
	return resp
}
