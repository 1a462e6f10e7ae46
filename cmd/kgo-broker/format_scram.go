package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/security"
)

// parseAddScram is Kafka's ScramParser for kafka-storage.sh format
// --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]' (or
// salt=<base64>,saltedpassword=<base64>, and iterations=<n>, default 4096):
// the bootstrap UserScramCredentialRecord of a user, so that brokers can
// authenticate each other before any AlterUserScramCredentials.
func parseAddScram(arg string) (*metadatacache.UserScramCredentialRecord, error) {
	arg = strings.TrimSpace(arg)
	i := strings.IndexByte(arg, '=')
	if i < 0 {
		return nil, &formatError{fmt.Sprintf("Failed to find equals sign in SCRAM argument '%s'", arg)}
	}
	mechName, conf := arg[:i], arg[i+1:]
	mech, ok := security.ScramMechanismByName(mechName)
	if !ok {
		return nil, &formatError{fmt.Sprintf("The add-scram mechanism %s is not supported.", mechName)}
	}
	if !strings.HasPrefix(conf, "[") {
		return nil, &formatError{"Expected configuration string to start with ["}
	}
	if !strings.HasSuffix(conf, "]") {
		return nil, &formatError{"Expected configuration string to end with ]"}
	}
	comps := map[string]string{}
	for _, c := range strings.Split(conf[1:len(conf)-1], ",") {
		j := strings.IndexByte(c, '=')
		if j < 0 {
			return nil, &formatError{"No equals sign found in SCRAM component: " + c}
		}
		v := c[j+1:]
		if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
			v = v[1 : len(v)-1]
		}
		comps[c[:j]] = v
	}
	take := func(k string) (string, bool) { v, ok := comps[k]; delete(comps, k); return v, ok }
	name, ok := take("name")
	if !ok {
		return nil, &formatError{"You must supply 'name' to add-scram"}
	}
	var salt []byte
	if s, ok := take("salt"); ok {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, &formatError{"Failed to decode given salt: " + s}
		}
		salt = b
	}
	iterations := mech.MinIterations
	if s, ok := take("iterations"); ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, &formatError{"Failed to parse iterations count: " + s}
		}
		if int32(n) < mech.MinIterations {
			return nil, &formatError{fmt.Sprintf("The minimum iterations for %s is %d", mech.Name, mech.MinIterations)}
		}
		if n > security.MaxScramIterations {
			return nil, &formatError{fmt.Sprintf("The maximum iterations for %s is %d", mech.Name, security.MaxScramIterations)}
		}
		iterations = int32(n)
	}
	password, hasPassword := take("password")
	saltedStr, hasSalted := take("saltedpassword")
	var salted []byte
	switch {
	case !hasPassword && !hasSalted:
		return nil, &formatError{"You must supply one of 'password' or 'saltedpassword' to add-scram"}
	case !hasPassword && salt == nil:
		return nil, &formatError{"You must supply 'salt' with 'saltedpassword' to add-scram"}
	case !hasPassword:
		b, err := base64.StdEncoding.DecodeString(saltedStr)
		if err != nil {
			return nil, &formatError{"Failed to decode given saltedPassword: " + saltedStr}
		}
		salted = b
	}
	if len(comps) > 0 {
		return nil, &formatError{"Unknown SCRAM configurations: " + strings.Join(slices.Sorted(maps.Keys(comps)), ", ")}
	}
	if salt == nil {
		salt = make([]byte, 32)
		rand.Read(salt)
	}
	if salted == nil {
		var err error
		if salted, err = mech.SaltedPassword(password, salt, int(iterations)); err != nil {
			return nil, &formatError{err.Error()}
		}
	}
	cred := mech.CredentialFromSaltedPassword(salted, salt, iterations)
	r := metadatacache.NewUserScramCredentialRecord()
	r.SetVersion(0)
	r.Name, r.Mechanism, r.Salt, r.StoredKey, r.ServerKey, r.Iterations = name, mech.Type, cred.Salt, cred.StoredKey, cred.ServerKey, cred.Iterations
	return r, nil
}
