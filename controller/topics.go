package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// CreateTopics (19) v2-7, DeleteTopics (20) v1-6 and CreatePartitions (37)
// v0-3, as Kafka's ControllerApis and ReplicationControlManager answer them.

// maxRecordsPerUserOp bounds the records one request may produce
// (QuorumController.MAX_RECORDS_PER_USER_OP); beyond it the whole request
// fails with POLICY_VIOLATION.
const maxRecordsPerUserOp = 10000

var errBatchTooLarge = newAPIError(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")

// maxPartitionsPerBatch bounds the partitions one CreateTopics or
// CreatePartitions may add (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH,
// checked before any record is built: validateTotalNumberOfPartitions).
const maxPartitionsPerBatch = 10000

var (
	errTooManyPartitions           = newAPIError(kerr.PolicyViolation, "Excessively large number of partitions per request.")
	errTooManyAdditionalPartitions = newAPIError(kerr.PolicyViolation, "Excessively large number of additional partitions per request.")
)

// Config sources (DescribeConfigsResponse ConfigSource).
const (
	sourceDynamicTopic int8 = 1
)

func (c *Controller) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	// ControllerApis.createTopics: duplicates and __cluster_metadata are
	// answered after the controller's own results.
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	var topics []kmsg.CreateTopicsRequestTopic
	total, partitions := 0, 0
	for _, t := range req.Topics {
		if seen[t.Topic] == 1 && t.Topic != clusterMetadataTopic {
			topics = append(topics, t)
			// validateTotalNumberOfPartitions: -1 is the default count,
			// other counts below 1 add nothing (they are refused later)
			n := int(t.NumPartitions)
			if len(t.ReplicaAssignment) > 0 {
				n = len(t.ReplicaAssignment)
			} else if n == -1 {
				n = int(c.cfg.NumPartitions)
			} else if n < 0 {
				n = 0
			}
			partitions += n
			total += 1 + len(t.Configs) + n
		}
	}
	fail := func(e *apiError) kmsg.Response {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, e.code(), e.message()
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if partitions > maxPartitionsPerBatch {
		return fail(errTooManyPartitions)
	}
	if total > maxRecordsPerUserOp {
		return fail(errBatchTooLarge)
	}

	var recs []metadatacache.Record
	results := make([]kmsg.CreateTopicsResponseTopic, 0, len(topics))
	mq := mutationQuotaOf(ctx)
	c.view(func(s *state) {
		mv := s.metadataVersion()
		for _, t := range topics {
			rt, trecs := c.createTopic(s, mv, t, mq)
			results = append(results, rt)
			recs = append(recs, trecs...)
		}
	})
	if len(recs) > maxRecordsPerUserOp {
		return fail(errBatchTooLarge)
	}
	if !req.ValidateOnly && len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			return fail(defaultAPIError(kerr.NotController))
		}
	}
	var summary []string
	for _, rt := range results {
		if rt.ErrorCode == 0 {
			summary = append(summary, rt.Topic+": SUCCESS")
		} else {
			summary = append(summary, fmt.Sprintf("%s: %s", rt.Topic, kerr.ErrorForCode(rt.ErrorCode)))
		}
	}
	if req.ValidateOnly {
		c.log.Info("validate-only CreateTopics result(s)", zap.String("results", strings.Join(summary, ", ")))
	} else {
		c.log.Info("CreateTopics result(s)", zap.String("results", strings.Join(summary, ", ")))
	}
	resp.Topics = append(resp.Topics, results...)
	for name, n := range seen {
		if n > 1 {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = name, kerr.InvalidRequest.Code, strp("Duplicate topic name.")
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if seen[clusterMetadataTopic] == 1 {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = clusterMetadataTopic, kerr.InvalidRequest.Code
		rt.ErrorMessage = strp("Creation of internal topic " + clusterMetadataTopic + " is prohibited.")
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopic decides one topic: its response entry and, on success, its
// TopicRecord, ConfigRecords and PartitionRecords. stateMu is held.
func (c *Controller) createTopic(s *state, mv int16, t kmsg.CreateTopicsRequestTopic, mq MutationQuota) (kmsg.CreateTopicsResponseTopic, []metadatacache.Record) {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic = t.Topic
	failed := func(e *apiError) (kmsg.CreateTopicsResponseTopic, []metadatacache.Record) {
		rt.ErrorCode, rt.ErrorMessage = e.code(), e.message()
		return rt, nil
	}

	// validateNewTopicNames, then existing topics, then configs: Kafka's order.
	var nameErr *apiError
	if msg := validateTopicName(t.Topic); msg != "" {
		nameErr = newAPIError(kerr.InvalidTopicException, "%s", msg)
	}
	if hasCollisionChars(t.Topic) {
		for other := range s.collisions[unifyCollisionChars(t.Topic)] {
			nameErr = newAPIError(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, other)
			break
		}
	}
	if _, ok := s.topicsByName[t.Topic]; ok {
		nameErr = newAPIError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	if nameErr != nil {
		return failed(nameErr)
	}

	overrides := make(map[string]string, len(t.Configs))
	var nulls []string
	for _, cfg := range t.Configs {
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		} else {
			overrides[cfg.Name] = *cfg.Value
		}
	}
	if len(nulls) > 0 {
		return failed(newAPIError(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ",")))
	}
	if e := c.validateTopicConfigs(overrides); e != nil {
		return failed(e)
	}

	var parts [][]int32
	switch {
	case len(t.ReplicaAssignment) > 0:
		if t.ReplicationFactor != -1 {
			return failed(newAPIError(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1."))
		}
		if t.NumPartitions != -1 {
			return failed(newAPIError(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1."))
		}
		byIndex := make(map[int32][]int32, len(t.ReplicaAssignment))
		rf := -1
		for _, a := range t.ReplicaAssignment {
			if _, dup := byIndex[a.Partition]; dup {
				return failed(newAPIError(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition))
			}
			if e := validateManualAssignment(s, a.Replicas, rf); e != nil {
				return failed(e)
			}
			rf = len(a.Replicas)
			if len(activeOf(s, a.Replicas)) == 0 {
				return failed(newAPIError(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", a.Partition))
			}
			byIndex[a.Partition] = a.Replicas
		}
		parts = make([][]int32, len(byIndex))
		for i := range parts {
			r, ok := byIndex[int32(i)]
			if !ok {
				return failed(newAPIError(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"))
			}
			parts[i] = r
		}
	case t.ReplicationFactor < -1 || t.ReplicationFactor == 0:
		return failed(newAPIError(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."))
	case t.NumPartitions < -1 || t.NumPartitions == 0:
		return failed(newAPIError(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."))
	default:
		n := t.NumPartitions
		if n == -1 {
			n = c.cfg.NumPartitions
		}
		rf := t.ReplicationFactor
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if int(n) > maxRecordsPerUserOp {
			return failed(errBatchTooLarge)
		}
		placed, err := placeReplicas(c.mu.rnd, s.usableBrokers(), int(n), int(rf))
		if err != nil {
			return failed(newAPIError(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): %s", rf, err.Error()))
		}
		for _, replicas := range placed {
			if len(activeOf(s, replicas)) == 0 {
				return failed(newAPIError(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf))
			}
		}
		parts = placed
	}

	// ReplicationControlManager.createTopic: the controller mutation
	// quota (KIP-599) is applied once the topic is valid.
	if !mq.Record(float64(len(parts))) {
		return failed(errThrottled)
	}
	id := newTopicID()
	rt.TopicID = id
	rt.NumPartitions = int32(len(parts))
	rt.ReplicationFactor = int16(len(parts[0]))
	rt.Configs = c.effectiveTopicConfigs(overrides)

	tr := metadatacache.NewTopicRecord()
	tr.SetVersion(0)
	tr.Name, tr.TopicID = t.Topic, id
	recs := []metadatacache.Record{tr}
	// ConfigRecords go after the TopicRecord and before the PartitionRecords.
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		recs = append(recs, configRecord(resourceTopic, t.Topic, n, strp(overrides[n])))
	}
	for i, replicas := range parts {
		recs = append(recs, newPartitionRecord(s, mv, id, int32(i), replicas))
	}
	return rt, recs
}

// newPartitionRecord builds a new partition: ISR = the active replicas,
// leader = the first of them, epochs 0 (buildPartitionRegistration).
func newPartitionRecord(s *state, mv int16, topicID [16]byte, partition int32, replicas []int32) *metadatacache.PartitionRecord {
	isr := activeOf(s, replicas)
	pr := metadatacache.NewPartitionRecord()
	pr.SetVersion(partitionRecordVersion(mv))
	pr.PartitionID = partition
	pr.TopicID = topicID
	pr.Replicas = append([]int32(nil), replicas...)
	pr.Isr = isr
	pr.RemovingReplicas = []int32{}
	pr.AddingReplicas = []int32{}
	pr.Leader = isr[0]
	pr.LeaderRecoveryState = 0
	pr.LeaderEpoch = 0
	pr.PartitionEpoch = 0
	if directoryAssignmentSupported(mv) {
		pr.Directories = make([][16]byte, len(replicas))
		for i, b := range replicas {
			pr.Directories[i] = s.defaultDir(b)
		}
	}
	return pr
}

// activeOf returns the replicas that are active (unfenced, not shutting down).
func activeOf(s *state, replicas []int32) []int32 {
	out := make([]int32, 0, len(replicas))
	for _, r := range replicas {
		if s.active(r) {
			out = append(out, r)
		}
	}
	return out
}

// validateManualAssignment is validateManualPartitionAssignment; rf < 0
// means "no replication factor to match yet".
func validateManualAssignment(s *state, replicas []int32, rf int) *apiError {
	if len(replicas) == 0 {
		return newAPIError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := append([]int32(nil), replicas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, b := range sorted {
		if _, ok := s.brokers[b]; !ok {
			return newAPIError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
		}
		if i > 0 && sorted[i-1] == b {
			return newAPIError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", b)
		}
	}
	if rf >= 0 && len(sorted) != rf {
		return newAPIError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(sorted), rf)
	}
	return nil
}

func (c *Controller) validateTopicConfigs(configs map[string]string) *apiError {
	if c.cfg.ValidateTopicConfig == nil {
		return nil
	}
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := c.cfg.ValidateTopicConfig(n, configs[n]); err != nil {
			return newAPIError(kerr.InvalidConfig, "%s", err.Error())
		}
	}
	return nil
}

func (c *Controller) effectiveTopicConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var entries []TopicConfigEntry
	if c.cfg.TopicConfigs != nil {
		entries = c.cfg.TopicConfigs(overrides)
	} else {
		for n, v := range overrides {
			entries = append(entries, TopicConfigEntry{Name: n, Value: strp(v), Source: sourceDynamicTopic})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name, rc.ReadOnly, rc.Source, rc.IsSensitive = e.Name, e.ReadOnly, e.Source, e.IsSensitive
		if !e.IsSensitive {
			rc.Value = e.Value
		}
		out = append(out, rc)
	}
	return out
}

func newTopicID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40 // java.util.UUID.randomUUID: version 4
		id[8] = id[8]&0x3f | 0x80 // IETF variant
		// Uuid.randomUuid never returns ZERO_UUID or METADATA_TOPIC_ID, and
		// Kafka avoids ids whose base64 starts with '-'.
		if id != ([16]byte{}) && id != ([16]byte{15: 1}) && id[0]&0xfc != 0xf8 {
			return id
		}
	}
}

func configRecord(typ int8, name, key string, value *string) *metadatacache.ConfigRecord {
	r := metadatacache.NewConfigRecord()
	r.SetVersion(0)
	r.ResourceType, r.ResourceName, r.Name, r.Value = typ, name, key, value
	return r
}

func (c *Controller) deleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	mq := mutationQuotaOf(ctx)
	add := func(name *string, id [16]byte, e *apiError) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	if c.cfg.DeleteTopicDisable {
		e := bareAPIError(kerr.TopicDeletionDisabled)
		if req.Version < 3 {
			e = newAPIError(kerr.InvalidRequest, "Topic deletion is disabled.")
		}
		for _, n := range req.TopicNames {
			add(strp(n), [16]byte{}, e)
		}
		for _, t := range req.Topics {
			add(t.Topic, t.TopicID, e)
		}
		return resp
	}

	// Gather names and ids, as ControllerApis.deleteTopics does.
	type entry struct {
		name *string
		id   [16]byte
		byID bool
	}
	var entries []entry
	for _, n := range req.TopicNames {
		entries = append(entries, entry{name: strp(n)})
	}
	for _, t := range req.Topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			add(nil, [16]byte{}, newAPIError(kerr.InvalidRequest, "Neither topic name nor id were specified."))
		case t.Topic == nil:
			entries = append(entries, entry{id: t.TopicID, byID: true})
		case t.TopicID == [16]byte{}:
			entries = append(entries, entry{name: t.Topic})
		default:
			add(t.Topic, t.TopicID, newAPIError(kerr.InvalidRequest, "You may not specify both topic name and topic id."))
		}
	}
	names := make(map[string]int)
	ids := make(map[[16]byte]int)
	for _, e := range entries {
		if e.byID {
			ids[e.id]++
		} else {
			names[*e.name]++
		}
	}
	var (
		toDelete []metadatacache.Record
		deleted  = make(map[[16]byte]bool)
		doneName = make(map[string]bool)
		doneID   = make(map[[16]byte]bool)
	)
	c.view(func(s *state) {
		for _, e := range entries {
			if e.byID {
				if doneID[e.id] {
					continue
				}
				doneID[e.id] = true
				if ids[e.id] > 1 {
					add(nil, e.id, newAPIError(kerr.InvalidRequest, "Duplicate topic id."))
					continue
				}
				t := s.topics[e.id]
				if t == nil {
					add(nil, e.id, defaultAPIError(kerr.UnknownTopicID))
					continue
				}
				if !mq.Record(float64(len(t.parts))) {
					add(nil, e.id, errThrottled)
					continue
				}
				deleted[e.id] = true
				add(strp(t.name), e.id, nil)
				continue
			}
			name := *e.name
			if doneName[name] {
				continue
			}
			doneName[name] = true
			if names[name] > 1 {
				add(e.name, [16]byte{}, newAPIError(kerr.InvalidRequest, "Duplicate topic name."))
				continue
			}
			id, ok := s.topicsByName[name]
			if !ok {
				add(e.name, [16]byte{}, defaultAPIError(kerr.UnknownTopicOrPartition))
				continue
			}
			if ids[id] > 0 || deleted[id] {
				add(e.name, id, newAPIError(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied."))
				continue
			}
			if !mq.Record(float64(len(s.topics[id].parts))) {
				add(e.name, id, errThrottled)
				continue
			}
			deleted[id] = true
			add(e.name, id, nil)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode == 0 && deleted[rt.TopicID] {
				r := metadatacache.NewRemoveTopicRecord()
				r.SetVersion(0)
				r.TopicID = rt.TopicID
				toDelete = append(toDelete, r)
			}
		}
	})
	if len(toDelete) > maxRecordsPerUserOp {
		return c.deleteFailed(req, errBatchTooLarge)
	}
	if len(toDelete) > 0 {
		if _, err := c.write(ctx, toDelete); err != nil {
			return c.deleteFailed(req, defaultAPIError(kerr.NotController))
		}
		c.log.Info("deleted topics", zap.Int("count", len(toDelete)))
	}
	return resp
}

func (c *Controller) deleteFailed(req *kmsg.DeleteTopicsRequest, e *apiError) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for _, n := range req.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = strp(n), e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Controller) createPartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	mq := mutationQuotaOf(ctx)
	add := func(name string, e *apiError) {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = name, e.code(), e.message()
		resp.Topics = append(resp.Topics, rt)
	}
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		if seen[t.Topic] > 1 {
			add(t.Topic, newAPIError(kerr.InvalidRequest, "Duplicate topic name."))
			seen[t.Topic] = -1
		}
	}
	var recs []metadatacache.Record
	tooLarge, tooManyPartitions := false, false
	c.view(func(s *state) {
		// validateTotalNumberOfPartitions: the increases of existing
		// topics, before anything is decided
		additional := 0
		for _, t := range req.Topics {
			if id, ok := s.topicsByName[t.Topic]; ok && seen[t.Topic] == 1 && t.Count >= 0 {
				additional += max(int(t.Count)-len(s.topics[id].parts), 0)
			}
		}
		if additional > maxPartitionsPerBatch {
			tooManyPartitions = true
			return
		}
		mv := s.metadataVersion()
		for _, t := range req.Topics {
			if seen[t.Topic] != 1 {
				continue
			}
			trecs, e := c.createPartitionsFor(s, mv, t, len(recs), mq)
			if e == errBatchTooLarge {
				tooLarge = true
				return
			}
			recs = append(recs, trecs...)
			add(t.Topic, e)
		}
	})
	fail := func(e *apiError) kmsg.Response {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			add(t.Topic, e)
		}
		return resp
	}
	if tooManyPartitions {
		return fail(errTooManyAdditionalPartitions)
	}
	if tooLarge {
		return fail(errBatchTooLarge)
	}
	if !req.ValidateOnly && len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			return fail(defaultAPIError(kerr.NotController))
		}
	}
	return resp
}

// createPartitionsFor decides one topic's partition increase. stateMu is held.
func (c *Controller) createPartitionsFor(s *state, mv int16, t kmsg.CreatePartitionsRequestTopic, recsSoFar int, mq MutationQuota) ([]metadatacache.Record, *apiError) {
	id, ok := s.topicsByName[t.Topic]
	if !ok {
		return nil, bareAPIError(kerr.UnknownTopicOrPartition)
	}
	topic := s.topics[id]
	cur := int32(len(topic.parts))
	switch {
	case t.Count == cur:
		return nil, newAPIError(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
	case t.Count < cur:
		return nil, newAPIError(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count)
	}
	additional := int(t.Count - cur)
	if t.Assignment != nil && len(t.Assignment) != additional {
		return nil, newAPIError(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(t.Assignment))
	}
	if recsSoFar+additional > maxRecordsPerUserOp {
		return nil, errBatchTooLarge
	}
	if !mq.Record(float64(additional)) {
		return nil, errThrottled
	}
	if cur == 0 {
		return nil, newAPIError(kerr.UnknownServerError, "Invalid state: topic %s appears to have no partitions.", t.Topic)
	}
	rf := len(topic.parts[0].replicas)
	var assignments [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			if e := validateManualAssignment(s, a.Replicas, rf); e != nil {
				return nil, e
			}
			if len(activeOf(s, a.Replicas)) == 0 {
				return nil, newAPIError(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", int(cur)+i)
			}
			assignments = append(assignments, a.Replicas)
		}
	} else {
		placed, err := placeReplicas(c.mu.rnd, s.usableBrokers(), additional, rf)
		if err != nil {
			return nil, newAPIError(kerr.InvalidReplicationFactor, "%s", err.Error())
		}
		assignments = placed
	}
	recs := make([]metadatacache.Record, 0, len(assignments))
	for i, replicas := range assignments {
		if len(activeOf(s, replicas)) == 0 {
			return nil, newAPIError(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
		}
		recs = append(recs, newPartitionRecord(s, mv, id, cur+int32(i), replicas))
	}
	return recs, nil
}
