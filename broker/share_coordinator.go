package broker

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/sharecoord"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// The broker side of the share coordinator (sharecoord/): FindCoordinator
// key type 2, and what the share state RPCs (83-87) have in common.

// coordErr is a FindCoordinator error with its message.
type coordErr struct {
	code int16
	msg  string
}

func newCoordErr(err *kerr.Error, msg string) *coordErr {
	if msg == "" {
		msg = sharecoord.KafkaMessage(err)
	}
	return &coordErr{code: err.Code, msg: msg}
}

// findShareCoordinator is KafkaApis.getCoordinator for key type 2.
func (b *Broker) findShareCoordinator(req *protocol.Request, key string, c *kmsg.FindCoordinatorResponseCoordinator) *coordErr {
	if req.Version < 6 {
		return newCoordErr(kerr.InvalidRequest, "")
	}
	if !b.authorizeCluster(req, opClusterAction) {
		return newCoordErr(kerr.ClusterAuthorizationFailed, "")
	}
	group, topicID, partition, ok := parseShareKey(key)
	if !ok {
		return newCoordErr(kerr.InvalidRequest, "Share coordinator key is invalid")
	}
	if b.shareCoord == nil {
		return newCoordErr(kerr.CoordinatorNotAvailable, "")
	}
	id, err := b.shareCoord.FindCoordinator(sharestate.Key(group, topicID, partition))
	if err != nil {
		return newCoordErr(kerr.CoordinatorNotAvailable, "")
	}
	if br := b.meta.Image().Broker(id); br == nil || br.Fenced {
		return newCoordErr(kerr.CoordinatorNotAvailable, "")
	}
	eps := b.leaderEndpoints(req.Listener, []int32{id})
	if len(eps) == 0 {
		return newCoordErr(kerr.CoordinatorNotAvailable, "")
	}
	c.NodeID, c.Host, c.Port = eps[0].id, eps[0].host, eps[0].port
	return nil
}

// parseShareKey is SharePartitionKey.getInstance(String): at least three
// ':'-separated tokens (Java's split, which drops trailing empty ones);
// the last is the partition, the one before it the topic id (Kafka's Uuid
// string: URL-safe base64 of 16 bytes), the rest, joined by ':', the group
// id, which must not be blank.
func parseShareKey(key string) (group string, topicID [16]byte, partition int32, ok bool) {
	tokens := strings.Split(key, ":")
	for len(tokens) > 0 && tokens[len(tokens)-1] == "" {
		tokens = tokens[:len(tokens)-1]
	}
	if len(tokens) < 3 {
		return "", topicID, 0, false
	}
	n := len(tokens)
	group = strings.Join(tokens[:n-2], ":")
	if strings.TrimSpace(group) == "" {
		return "", topicID, 0, false
	}
	// Uuid.fromString: at most 24 characters of URL-safe base64, the
	// padding optional (java.util.Base64's URL decoder takes both).
	enc, id := base64.RawURLEncoding, tokens[n-2]
	if strings.HasSuffix(id, "=") {
		enc = base64.URLEncoding
	}
	raw, err := enc.DecodeString(id)
	if len(id) > 24 || err != nil || len(raw) != 16 {
		return "", topicID, 0, false
	}
	copy(topicID[:], raw)
	p, err := strconv.ParseInt(tokens[n-1], 10, 32)
	if err != nil {
		return "", topicID, 0, false
	}
	return group, topicID, int32(p), true
}

// shareStateAuthorized is the check KafkaApis makes first on the share
// state RPCs, which only brokers send: CLUSTER_ACTION on the cluster.
func (b *Broker) shareStateAuthorized(req *protocol.Request) bool {
	return b.authorizeCluster(req, opClusterAction)
}

// shareStateErr is what every partition answers when the request is
// refused or no share coordinator runs: Kafka's toGlobalErrorResponse
// (the error's message), or NOT_COORDINATOR "Unable to <what>: ..." from a
// broker without one.
func shareStateErr(err *kerr.Error, what string) (int16, *string) {
	msg := sharecoord.KafkaMessage(err)
	if err == kerr.NotCoordinator {
		msg = "Unable to " + what + ": " + msg
	}
	return err.Code, &msg
}
