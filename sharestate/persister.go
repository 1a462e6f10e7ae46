// Package sharestate is what the three parts of share groups (KIP-932) share:
// the Persister through which share partitions (package share, on partition
// leaders) and the group coordinator (package group) reach the share
// coordinator (package sharecoord, on __share_group_state), and the facts of
// the persisted state they all speak (record states, the coordinator key).
// It imports nothing of the project, so each of them can depend on it.
//
//	share.Manager (SharePartition) ──Read/Write──────────┐
//	group.Coordinator (share groups) ─Initialize/Delete/─┤ Persister (broker/share_persister.go:
//	                                   ReadSummary       │  FindCoordinator key type 2, one RPC per
//	                                                     ▼  coordinator node, over the peers)
//	                                   broker/83..87 ─► sharecoord.Coordinator ─► __share_group_state
package sharestate

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Persister is Kafka's Persister (server/share/persister): the share state
// RPCs (keys 83-87), each request for one group and any number of topic
// partitions. The implementation splits a request by share coordinator
// (the leader of the __share_group_state partition of each partition's
// Key), sends one request per coordinator, and merges the answers in the
// request's order. A partition whose coordinator cannot be found or reached
// is answered with its own error code (COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...) instead of failing the
// call; the returned error is only for a cancelled context.
type Persister interface {
	InitializeState(context.Context, *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error)
	WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error)
	DeleteState(context.Context, *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
	ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error)
}

// Key is the share coordinator key of one share partition, Kafka's
// SharePartitionKey.asCoordinatorKey: "groupId:topicId:partition" with the
// topic id in Kafka's base64 Uuid form. FindCoordinator key type 2 takes it,
// and the coordinator partition is abs(javaStringHashCode(key)) % N of
// __share_group_state.
func Key(groupID string, topicID [16]byte, partition int32) string {
	return fmt.Sprintf("%s:%s:%d", groupID, UUIDString(topicID), partition)
}

// UUIDString is Kafka's Uuid.toString: URL-safe base64 without padding.
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// RecordState is the state of an in-flight record of a share partition as
// persisted (Kafka's RecordState; ShareUpdate/ShareSnapshot DeliveryState).
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	// Archiving: on its way to the share group's dead-letter queue
	// (KIP-1191, share.version 2); Archived once the DLQ write ended
	Archiving RecordState = 3
	Archived  RecordState = 4
)

// AcknowledgeType is a ShareAcknowledge/ShareFetch acknowledgement type
// (KIP-932, KIP-1222).
type AcknowledgeType int8

const (
	AckGap     AcknowledgeType = 0
	AckAccept  AcknowledgeType = 1
	AckRelease AcknowledgeType = 2
	AckReject  AcknowledgeType = 3
	AckRenew   AcknowledgeType = 4
)
